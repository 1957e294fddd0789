//! The PostgreSQL server's share of a transaction, counted: a throwaway cluster of its
//! own, started under callgrind, whose every backend writes its instructions when it
//! exits.
//!
//! A run's count is the sum over the server's processes that began and ended during it
//! (the backends of its connections), read once every one of them has exited. The
//! server's own processes (checkpointer, WAL writer) live as long as the cluster and
//! are never counted; nor is autovacuum, which is off, so that no worker of its own
//! lands in a run.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::totals;
use crate::error::{Error, Result};

/// How long the cluster may take to accept connections under callgrind.
const READY_WITHIN: Duration = Duration::from_secs(120);
/// How long a run's backends may take to exit and write their counts.
const EXITED_WITHIN: Duration = Duration::from_secs(60);

/// A PostgreSQL cluster in a temporary directory, run under callgrind, stopped when
/// dropped.
pub(crate) struct CountedServer {
    process: Child,
    dir: tempfile::TempDir,
    port: u16,
}

impl CountedServer {
    /// Makes the cluster with `initdb` and starts it. The binaries are
    /// `FENCED_PG_BIN`'s, or the newest of `/usr/lib/postgresql/<version>/bin`; run as
    /// root, the server runs as `FENCED_PG_OS_USER` (`postgres` by default).
    pub(crate) async fn start() -> Result<CountedServer> {
        let bin = binaries()?;
        let account = account()?;
        let dir = tempfile::tempdir().map_err(|source| Error::Io {
            path: std::env::temp_dir().display().to_string(),
            source,
        })?;
        let counts = dir.path().join("counts");
        std::fs::create_dir(&counts).map_err(|source| io(&counts, source))?;
        for path in [dir.path(), &counts] {
            hand_over(path, account)?;
        }
        let data = dir.path().join("data");
        let initdb = as_account(Command::new(bin.join("initdb")), account)
            .arg("-D")
            .arg(&data)
            .args(["-A", "trust", "-U", "postgres", "-N"])
            .output()
            .map_err(Error::Spawn)?;
        if !initdb.status.success() {
            return Err(Error::Protocol(format!(
                "initdb failed ({}): {}",
                initdb.status,
                String::from_utf8_lossy(&initdb.stderr).trim()
            )));
        }
        let port = free_port()?;
        let log = dir.path().join("server.log");
        let log_file = std::fs::File::create(&log).map_err(|source| io(&log, source))?;
        let mut command = as_account(Command::new("valgrind"), account);
        command
            .arg("--tool=callgrind")
            .arg("--quiet")
            .arg(format!(
                "--callgrind-out-file={}",
                counts.join("backend.%p").display()
            ))
            .arg(bin.join("postgres"))
            .arg("-D")
            .arg(&data)
            .args(["-p", &port.to_string()])
            .args(["-c", "listen_addresses=127.0.0.1"])
            .arg("-c")
            .arg(format!("unix_socket_directories={}", dir.path().display()))
            // As the benchmark's server is set; no autovacuum worker in a run.
            .args(["-c", "synchronous_commit=off", "-c", "autovacuum=off"])
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().map_err(|source| io(&log, source))?)
            .stderr(log_file)
            // Its own process group, out of reach of a terminal's signals to this one:
            // `stop` ends it.
            .process_group(0);
        let process = command.spawn().map_err(|source| {
            if source.kind() == std::io::ErrorKind::NotFound {
                Error::Usage(
                    "the server's count runs PostgreSQL under valgrind's callgrind, and \
                     `valgrind` was not found: install valgrind, or pass --no-server"
                        .into(),
                )
            } else {
                Error::Spawn(source)
            }
        })?;
        let mut starting = Starting {
            process: Some(process),
            log,
        };
        starting.ready(&config_of(port)).await?;
        let server = CountedServer {
            process: starting
                .process
                .take()
                .expect("the process, until handed on"),
            dir,
            port,
        };
        server.settled().await?;
        Ok(server)
    }

    /// The connection string of the cluster's `postgres` database.
    pub(crate) fn config(&self) -> String {
        config_of(self.port)
    }

    /// The server's instructions in the processes that `run` makes it start (the
    /// backends of its connections): every one of them begins and ends within it.
    pub(crate) async fn instructions<F>(&self, run: F) -> Result<u64>
    where
        F: Future<Output = Result<()>>,
    {
        // In this order: a process that ends after it was seen as staying is not the
        // run's, however late its file appears.
        let staying = self.children();
        let before = self.count_files()?;
        run.await?;
        let deadline = Instant::now() + EXITED_WITHIN;
        // A process writes its count as its last act: once the run's are gone, each
        // new file is whole.
        while !self.children().is_subset(&staying) {
            if Instant::now() > deadline {
                return Err(Error::Protocol(format!(
                    "the counted run's backends had not exited within {EXITED_WITHIN:?}"
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let new: Vec<PathBuf> = self
            .count_files()?
            .into_iter()
            .filter(|file| {
                !before.contains(file) && !pid_of(file).is_some_and(|pid| staying.contains(&pid))
            })
            .collect();
        if new.is_empty() {
            return Err(Error::Protocol(
                "the counted run started no backend on the server".into(),
            ));
        }
        total(&new)
    }

    /// Waits until the server's processes are the ones it keeps: those it started
    /// with, and not the backend that told it was ready.
    async fn settled(&self) -> Result<()> {
        let deadline = Instant::now() + READY_WITHIN;
        let mut last = self.children();
        loop {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let now = self.children();
            if now == last && !self.count_files()?.is_empty() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(Error::Protocol(format!(
                    "the counted PostgreSQL server's processes did not settle within \
                     {READY_WITHIN:?}"
                )));
            }
            last = now;
        }
    }

    /// The live processes the server's postmaster started.
    fn children(&self) -> HashSet<u32> {
        children_of(self.process.id())
    }

    fn count_files(&self) -> Result<HashSet<PathBuf>> {
        let counts = self.dir.path().join("counts");
        let entries = std::fs::read_dir(&counts).map_err(|source| io(&counts, source))?;
        Ok(entries
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .collect())
    }
}

impl Drop for CountedServer {
    fn drop(&mut self) {
        stop(&mut self.process);
    }
}

/// The cluster while it starts: stopped if it fails to.
struct Starting {
    process: Option<Child>,
    log: PathBuf,
}

impl Starting {
    /// Waits until the cluster accepts a connection.
    async fn ready(&mut self, config: &str) -> Result<()> {
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            if tokio_postgres::connect(config, tokio_postgres::NoTls)
                .await
                .is_ok()
            {
                return Ok(());
            }
            let exited = self
                .process
                .as_mut()
                .and_then(|process| process.try_wait().ok().flatten());
            if exited.is_some() || Instant::now() > deadline {
                let log = std::fs::read_to_string(&self.log).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(10).collect();
                return Err(Error::Protocol(format!(
                    "the counted PostgreSQL server {}: {}",
                    match exited {
                        Some(status) => format!("exited while starting ({status})"),
                        None => format!("did not accept connections within {READY_WITHIN:?}"),
                    },
                    tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
                )));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Starting {
    fn drop(&mut self) {
        if let Some(process) = &mut self.process {
            stop(process);
        }
    }
}

/// The sum of the files' totals.
fn total(files: &[PathBuf]) -> Result<u64> {
    let mut sum = 0;
    for file in files {
        let text = std::fs::read_to_string(file).map_err(|source| io(file, source))?;
        sum += totals(&text).ok_or_else(|| {
            Error::Protocol(format!(
                "no instruction total in callgrind's output {}",
                file.display()
            ))
        })?;
    }
    Ok(sum)
}

/// The process whose count `file` is (`backend.<pid>`).
fn pid_of(file: &Path) -> Option<u32> {
    file.file_name()?
        .to_str()?
        .strip_prefix("backend.")?
        .parse()
        .ok()
}

/// The live processes whose parent is `parent`, read from `/proc`. A zombie is not
/// live: it has written its count.
fn children_of(parent: u32) -> HashSet<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return HashSet::new();
    };
    entries
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // `pid (comm) state ppid ...`: the name may hold spaces, so read after it.
            let (_, rest) = stat.rsplit_once(')')?;
            let mut fields = rest.split_whitespace();
            let (state, ppid) = (fields.next()?, fields.next()?);
            (state != "Z" && ppid == parent.to_string()).then_some(pid)
        })
        .collect()
}

/// Whether process `pid` is alive (a zombie is not).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z")
    })
}

fn config_of(port: u16) -> String {
    format!("host=127.0.0.1 port={port} user=postgres dbname=postgres")
}

/// Stops the server and waits until none of its processes is left, so that none still
/// writes in the directory about to be removed. Each of PostgreSQL's processes is a
/// session of its own, out of the postmaster's group, so a signal to the group would
/// reach the postmaster alone: a fast shutdown (`SIGINT`) has it end the others first.
/// Past a deadline, every one of them is killed.
fn stop(process: &mut Child) {
    let postmaster = process.id();
    let mut left = children_of(postmaster);
    left.insert(postmaster);
    signal("-INT", &[postmaster]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while process.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    left.retain(|pid| alive(*pid));
    if !left.is_empty() {
        signal("-KILL", &left.iter().copied().collect::<Vec<_>>());
        let _ = process.kill();
    }
    let _ = process.wait();
    let deadline = Instant::now() + Duration::from_secs(30);
    while left.iter().any(|pid| alive(*pid)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends `signal` to `pids` with procps's `kill`: std sends no signal but `SIGKILL`.
fn signal(signal: &str, pids: &[u32]) {
    let _ = Command::new("kill")
        .arg(signal)
        .args(pids.iter().map(u32::to_string))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// The directory of the server's binaries.
fn binaries() -> Result<PathBuf> {
    let bin = match std::env::var_os("FENCED_PG_BIN") {
        Some(dir) => Some(PathBuf::from(dir)),
        None => newest_debian_bin(),
    }
    .filter(|dir| ["initdb", "postgres"].iter().all(|b| dir.join(b).is_file()));
    bin.ok_or_else(|| {
        Error::Usage(
            "the server's count starts a PostgreSQL cluster of its own, and its binaries \
             (initdb, postgres) were not found: install Debian's postgresql-15 package, set \
             FENCED_PG_BIN to the directory that holds them, or pass --no-server"
                .into(),
        )
    })
}

/// The newest `/usr/lib/postgresql/<version>/bin`.
fn newest_debian_bin() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let version = entry.file_name().to_str()?.parse().ok()?;
            Some((version, entry.path().join("bin")))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

/// The `(uid, gid)` the server runs as when this process is root, which PostgreSQL
/// refuses to run as.
fn account() -> Result<Option<(u32, u32)>> {
    let me = std::fs::metadata("/proc/self")
        .map_err(|source| io(Path::new("/proc/self"), source))?
        .uid();
    if me != 0 {
        return Ok(None);
    }
    let name = std::env::var("FENCED_PG_OS_USER").unwrap_or_else(|_| "postgres".to_owned());
    let id = |flag: &str| -> Result<u32> {
        let output = Command::new("id")
            .args([flag, &name])
            .output()
            .map_err(Error::Spawn)?;
        let number = String::from_utf8_lossy(&output.stdout).trim().parse().ok();
        number.filter(|_| output.status.success()).ok_or_else(|| {
            Error::Usage(format!(
                "run as root, the server's count runs PostgreSQL as the account {name:?}, \
                 which does not exist: create it, or set FENCED_PG_OS_USER"
            ))
        })
    };
    Ok(Some((id("-u")?, id("-g")?)))
}

fn as_account(mut command: Command, account: Option<(u32, u32)>) -> Command {
    if let Some((uid, gid)) = account {
        command.uid(uid).gid(gid);
    }
    command
}

fn hand_over(path: &Path, account: Option<(u32, u32)>) -> Result<()> {
    match account {
        Some((uid, gid)) => {
            std::os::unix::fs::chown(path, Some(uid), Some(gid)).map_err(|source| io(path, source))
        }
        None => Ok(()),
    }
}

/// A port on 127.0.0.1 that nothing listens on now.
fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|source| io(Path::new("127.0.0.1:0"), source))?;
    let port = listener
        .local_addr()
        .map_err(|source| io(Path::new("127.0.0.1:0"), source))?
        .port();
    Ok(port)
}

fn io(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.display().to_string(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run's total is the sum of its backends' files; a file without a total is
    /// an error, not a zero.
    #[test]
    fn a_runs_total_is_the_sum_of_its_backends_counts() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let a = write("backend.1", "events: Ir\ntotals: 1000\n");
        let b = write("backend.2", "events: Ir\nsummary: 234\n");
        assert_eq!(total(&[a.clone(), b]).unwrap(), 1_234);
        // Negative control: a file cut before its total.
        let partial = write("backend.3", "events: Ir\nfl=(1) x\n");
        assert!(total(&[a, partial]).is_err());
    }

    #[test]
    fn a_files_process_is_read_from_its_name() {
        assert_eq!(pid_of(Path::new("/tmp/x/backend.4242")), Some(4242));
        // Negative controls: another name, or no number.
        assert_eq!(pid_of(Path::new("/tmp/x/callgrind.4242")), None);
        assert_eq!(pid_of(Path::new("/tmp/x/backend.x")), None);
    }

    /// `count` statements, each on a connection of its own.
    async fn selects(config: String, count: usize) -> Result<()> {
        for _ in 0..count {
            let (client, connection) =
                tokio_postgres::connect(&config, tokio_postgres::NoTls).await?;
            let connection = tokio::spawn(connection);
            client.simple_query("SELECT 1").await?;
            drop(client);
            let _ = connection.await;
        }
        Ok(())
    }

    /// A counted server counts the backends each run opens, and only those: more
    /// connections, more instructions, each about as many as the next. Negative
    /// control: a run that opens none is an error, not a zero.
    #[tokio::test]
    async fn a_run_counts_the_backends_it_opened() {
        if let Err(missing) = binaries() {
            assert!(std::env::var_os("CI").is_none(), "CI is set: {missing}");
            eprintln!("the counted server's test did not run: {missing}");
            return;
        }
        let server = CountedServer::start().await.expect("a counted server");
        let config = server.config();
        let one = server
            .instructions(selects(config.clone(), 1))
            .await
            .unwrap();
        let three = server
            .instructions(selects(config.clone(), 3))
            .await
            .unwrap();
        let five = server.instructions(selects(config, 5)).await.unwrap();
        assert!(one < three && three < five, "{one}, {three}, {five}");
        // Two connections more cost about the same each time: within a tenth.
        let (first, second) = (three - one, five - three);
        assert!(
            first.abs_diff(second) * 10 < first,
            "two connections cost {first}, then {second}"
        );
        let nothing = server.instructions(async { Ok(()) }).await;
        assert!(nothing.is_err(), "{nothing:?}");

        // Stopped, the server leaves neither a process nor its directory behind.
        let (dir, postmaster) = (server.dir.path().to_owned(), server.process.id());
        let others = children_of(postmaster);
        assert!(!others.is_empty(), "the server runs no process of its own");
        drop(server);
        assert!(!alive(postmaster) && !others.iter().any(|pid| alive(*pid)));
        assert!(!dir.exists(), "{} is left", dir.display());
    }

    /// This process's children are found, and only while they live.
    #[test]
    fn a_child_is_seen_until_it_exits() {
        let me = std::process::id();
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        assert!(children_of(me).contains(&child.id()));
        child.kill().unwrap();
        child.wait().unwrap();
        // Negative control: once reaped, it is gone.
        assert!(!children_of(me).contains(&child.id()));
    }
}
