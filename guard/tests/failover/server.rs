//! One PostgreSQL server of the tests' own: its binaries, the operating-system account
//! it runs as, a reserved port, a data directory, and the process group it runs in,
//! killed when the [`Server`] is dropped (also when a test fails), so that no server
//! outlives its test.
//!
//! - Binaries: `FENCED_PG_BIN`, or the newest `/usr/lib/postgresql/<version>/bin`
//!   holding `pg_rewind` (Debian's `postgresql-<version>` package). Without them the
//!   tests say that they did not run, unless `CI` is set: then they fail.
//! - Account: `initdb` refuses root, so a test run as root runs every server and tool as
//!   `FENCED_PG_OS_USER` (default `postgres`, which Debian's package creates); a test
//!   run as another user runs them as itself.
//! - Ports: outside the system's ephemeral range (so that no outgoing connection takes
//!   a port while its server is down), each reserved by an exclusive lock on a file in
//!   `fenced-failover-ports` in the temporary directory for as long as the test holds
//!   it, so that parallel tests, and test processes running at the same time, never
//!   share one.

use std::fs::File;
use std::io::Read;
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use rand::Rng;

/// How long a server may take to accept connections after it was started (recovery
/// and promotion included).
const READY_WITHIN: Duration = Duration::from_secs(90);

/// The PostgreSQL binaries and the account the servers run as.
#[derive(Clone, Debug)]
pub struct Toolbox {
    bin: PathBuf,
    /// `(uid, gid)` to switch to, when the tests run as root.
    account: Option<(u32, u32)>,
}

impl Toolbox {
    /// The binaries and account, found once per process. `None` (after saying so on
    /// standard error) when there are no binaries and `CI` is not set; panics with
    /// what to install when `CI` is set.
    pub fn get() -> Option<&'static Toolbox> {
        static TOOLBOX: OnceLock<Option<Toolbox>> = OnceLock::new();
        TOOLBOX.get_or_init(find).as_ref()
    }

    /// The path of the binary `name` (`initdb`, `pg_ctl`, `postgres`, ...).
    pub fn bin(&self, name: &str) -> PathBuf {
        self.bin.join(name)
    }

    /// Makes `path` the servers' account's own (when the tests run as root).
    pub fn hand_over(&self, path: &Path) {
        if let Some((uid, gid)) = self.account {
            std::os::unix::fs::chown(path, Some(uid), Some(gid))
                .unwrap_or_else(|e| panic!("chown {}: {e}", path.display()));
        }
    }

    /// A command running binary `name` as the servers' account.
    pub fn command(&self, name: &str) -> Command {
        let mut command = Command::new(self.bin(name));
        if let Some((uid, gid)) = self.account {
            command.uid(uid).gid(gid);
        }
        command.env_remove("PGDATA").env_remove("PGPORT");
        command
    }

    /// Runs binary `name` with `args` to its end, off the runtime's threads; panics
    /// with its output if it fails.
    pub async fn run(&self, name: &str, args: &[&str]) -> String {
        let mut command = self.command(name);
        command.args(args).stdin(Stdio::null());
        let shown = format!("{name} {}", args.join(" "));
        let output = tokio::task::spawn_blocking(move || command.output())
            .await
            .expect("the command's thread")
            .unwrap_or_else(|e| panic!("cannot run {shown}: {e}"));
        if !output.status.success() {
            panic!(
                "{shown} failed ({}):\n{}{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        String::from_utf8_lossy(&output.stdout).into_owned()
    }
}

fn find() -> Option<Toolbox> {
    let bin = match std::env::var_os("FENCED_PG_BIN") {
        Some(dir) => Some(PathBuf::from(dir)),
        None => newest_debian_bin(),
    }
    .filter(|dir| {
        ["initdb", "postgres", "pg_basebackup", "pg_rewind"]
            .iter()
            .all(|b| dir.join(b).is_file())
    });
    let Some(bin) = bin else {
        let what = "the PostgreSQL server binaries (initdb, postgres, pg_basebackup, \
                    pg_rewind) were not found: install Debian's postgresql-15 package, or \
                    set FENCED_PG_BIN to the directory that holds them";
        if std::env::var_os("CI").is_some() {
            panic!("CI is set: {what}");
        }
        eprintln!("the failover tests did not run: {what}");
        return None;
    };
    Some(Toolbox {
        bin,
        account: account(),
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

/// The account to run the servers as: `None` when this process is not root.
fn account() -> Option<(u32, u32)> {
    let me = std::fs::metadata("/proc/self")
        .expect("read /proc/self")
        .uid();
    if me != 0 {
        return None;
    }
    let name = std::env::var("FENCED_PG_OS_USER").unwrap_or_else(|_| "postgres".to_owned());
    let id = |flag: &str| -> u32 {
        let output = Command::new("id")
            .args([flag, &name])
            .output()
            .expect("run id");
        assert!(
            output.status.success(),
            "the tests run as root and PostgreSQL refuses to: the account {name:?} runs the \
             servers, but it does not exist (create it, or set FENCED_PG_OS_USER)"
        );
        String::from_utf8_lossy(&output.stdout)
            .trim()
            .parse()
            .expect("id prints a number")
    };
    Some((id("-u"), id("-g")))
}

/// A TCP port on 127.0.0.1, reserved for this process while the value lives.
#[derive(Debug)]
pub struct Port {
    number: u16,
    _lock: File,
}

impl Port {
    /// Reserves a free port outside the system's ephemeral range.
    pub fn reserve() -> Port {
        let (low, high) = band();
        let span = u32::from(high - low) + 1;
        let start = rand::rng().random_range(0..span);
        // One directory of lock files, one per port ever used, never removed: removing
        // a lock file while another process opens it would let two lock one port.
        let locks = std::env::temp_dir().join("fenced-failover-ports");
        std::fs::create_dir_all(&locks).expect("the port locks' directory");
        for i in 0..span {
            let number = u16::try_from(u32::from(low) + (start + i) % span).expect("in band");
            let path = locks.join(format!("{number}.lock"));
            let Ok(lock) = File::options()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
            else {
                continue;
            };
            if lock.try_lock().is_err() {
                continue;
            }
            if TcpListener::bind((Ipv4Addr::LOCALHOST, number)).is_ok() {
                return Port {
                    number,
                    _lock: lock,
                };
            }
        }
        panic!("no free port between {low} and {high}");
    }

    pub fn number(&self) -> u16 {
        self.number
    }
}

/// Ports no outgoing connection is given: above the system's ephemeral range when
/// there is room, below it otherwise.
fn band() -> (u16, u16) {
    let mut text = String::new();
    let range = File::open("/proc/sys/net/ipv4/ip_local_port_range")
        .and_then(|mut f| f.read_to_string(&mut text))
        .ok()
        .and_then(|_| {
            let mut parts = text.split_whitespace().map(|p| p.parse::<u16>().ok());
            Some((parts.next()??, parts.next()??))
        });
    match range {
        Some((_, high)) if high <= 64_000 => (high + 1, 65_000),
        Some((low, _)) if low > 21_000 => (20_000, low - 1),
        _ => (61_000, 65_000),
    }
}

/// One server: its name (its `cluster_name`, which its WAL receiver also gives the
/// primary as `application_name`), its port and data directory, and its process while
/// it runs. Dropping it kills the process group.
#[derive(Debug)]
pub struct Server {
    name: String,
    port: Port,
    data: PathBuf,
    sockets: PathBuf,
    log: PathBuf,
    tools: Toolbox,
    process: Option<Child>,
}

impl Server {
    /// A server named `name` for the data directory `data` (which may not exist yet),
    /// with its sockets and log in `dir`.
    pub fn new(tools: &Toolbox, dir: &Path, name: &str) -> Server {
        Server {
            name: name.to_owned(),
            port: Port::reserve(),
            data: dir.join(name),
            sockets: dir.to_owned(),
            log: dir.join(format!("{name}.log")),
            tools: tools.clone(),
            process: None,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn port(&self) -> u16 {
        self.port.number()
    }

    pub fn data(&self) -> &Path {
        &self.data
    }

    /// The superuser's connection string to this server alone.
    pub fn admin_url(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=postgres dbname=postgres",
            self.port()
        )
    }

    /// Starts the server on its data directory and waits until it accepts connections.
    pub async fn start(&mut self) {
        assert!(self.process.is_none(), "{} is running already", self.name);
        let log = File::options()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("open the server's log");
        self.tools.hand_over(&self.log);
        let mut command = self.tools.command("postgres");
        command
            .arg("-D")
            .arg(&self.data)
            .args(["-p", &self.port().to_string()])
            .args(["-c", "listen_addresses=127.0.0.1"])
            .arg("-c")
            .arg(format!(
                "unix_socket_directories={}",
                self.sockets.display()
            ))
            .args(["-c", &format!("cluster_name={}", self.name)])
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("the log again"))
            .stderr(log)
            // Its own process group, so that a kill reaches every process of the server
            // at once, as a machine failing would.
            .process_group(0);
        self.process = Some(command.spawn().expect("start postgres"));
        self.ready().await;
    }

    /// Waits until the server accepts a connection; panics with its log if it exits or
    /// takes too long.
    async fn ready(&mut self) {
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            if let Ok((client, connection)) =
                tokio_postgres::connect(&self.admin_url(), tokio_postgres::NoTls).await
            {
                drop(client);
                drop(connection);
                return;
            }
            let exited = self
                .process
                .as_mut()
                .and_then(|p| p.try_wait().ok().flatten());
            if let Some(status) = exited {
                self.process = None;
                panic!(
                    "{} exited ({status}) while starting:\n{}",
                    self.name,
                    self.log_tail()
                );
            }
            assert!(
                Instant::now() < deadline,
                "{} did not accept connections within {READY_WITHIN:?}:\n{}",
                self.name,
                self.log_tail()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The end of the server's log, for a failure's message.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// Kills every process of the server at once (`SIGKILL` to its process group), as
    /// a crash of its machine would, and waits until none is left.
    pub fn kill(&mut self) {
        let Some(mut process) = self.process.take() else {
            return;
        };
        let group = process.id();
        // `kill` of procps: std has no signal to a group.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{group}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = process.kill();
        let _ = process.wait();
        // The server's other processes are the group's; /proc says when they are gone
        // (a new server on this data directory refuses to start while one is left).
        let deadline = Instant::now() + Duration::from_secs(30);
        while group_alive(group) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Whether the server's process is running.
    pub fn is_running(&self) -> bool {
        self.process.is_some()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Whether any live process of process group `group` is left. A zombie is not: it
/// holds nothing, and whoever adopted it may never reap it.
fn group_alive(group: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.filter_map(Result::ok).any(|entry| {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            return false;
        };
        // `pid (comm) state ppid pgrp ...`: the name may hold spaces, so read after it.
        stat.rsplit_once(')').is_some_and(|(_, rest)| {
            let fields: Vec<&str> = rest.split_whitespace().take(3).collect();
            matches!(fields.as_slice(), [state, _, pgrp] if *state != "Z" && *pgrp == group.to_string())
        })
    })
}
