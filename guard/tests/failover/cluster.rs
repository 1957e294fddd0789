//! A primary and its standby, on this machine: PostgreSQL's own streaming replication
//! between two [`Server`]s in a temporary directory, and what the tests do to them:
//! wait for the standby to replay, cut replication, kill the primary, promote the
//! standby, rebuild the old primary as the new standby (`pg_rewind`), turn on
//! synchronous replication, and restore a base backup to a point in time.
//!
//! Every wait is on the servers' own views (`pg_stat_replication`,
//! `pg_stat_wal_receiver`, `pg_is_in_recovery()`, `pg_stat_archiver`), never a sleep
//! that hopes. The application connects as `app`, an ordinary role that owns the
//! database `app` and nothing else; the tests' own look-behind-the-scenes statements
//! connect as the superuser `postgres`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tempfile::TempDir;
use tokio::sync::OnceCell;
use tokio_postgres::{Client, NoTls};

use crate::server::{Server, Toolbox};

/// How long a wait on a server's view may last before the test fails.
const WAIT: Duration = Duration::from_secs(60);

/// The settings every server starts with. `fsync` is off: a killed process leaves
/// what it wrote in the kernel's cache, so nothing a test does loses a write by it.
/// `wal_log_hints` is what `pg_rewind` needs; `wal_keep_size` lets a standby whose
/// replication was cut catch up again from the primary's `pg_wal`.
const SETTINGS: &str = "
wal_level = replica
max_wal_senders = 10
wal_keep_size = '256MB'
hot_standby = on
wal_log_hints = on
fsync = off
shared_buffers = '16MB'
max_connections = 60
log_min_messages = warning
";

/// What a cluster is made with.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// A streaming standby beside the primary.
    pub standby: bool,
    /// WAL archived to a directory of the cluster's own, for point-in-time restores.
    pub archive: bool,
}

/// Two servers (or one) in a temporary directory; dropping it kills them and removes
/// the directory.
pub struct Cluster {
    servers: Vec<Server>,
    primary: usize,
    archive: Option<PathBuf>,
    tools: &'static Toolbox,
    backups: usize,
    // Last: removed after the servers are killed.
    dir: TempDir,
}

impl Cluster {
    /// A primary (and, with `options.standby`, a standby streaming from it), the role
    /// `app` and its database `app`. `None` when the PostgreSQL binaries are missing
    /// and `CI` is not set (see [`Toolbox::get`]).
    pub async fn start(options: Options) -> Option<Cluster> {
        let tools = Toolbox::get()?;
        let dir = tempfile::Builder::new()
            .prefix("fenced-failover-")
            .tempdir()
            .expect("a temporary directory");
        tools.hand_over(dir.path());
        let mut settings = SETTINGS.to_owned();
        let archive = options.archive.then(|| {
            let archive = dir.path().join("archive");
            std::fs::create_dir(&archive).expect("the archive directory");
            tools.hand_over(&archive);
            settings.push_str(&format!(
                "archive_mode = on\narchive_command = 'cp %p {}/%f'\n",
                archive.display()
            ));
            archive
        });
        let mut primary = Server::new(tools, dir.path(), "node0");
        let template = template(tools).await;
        copy_tree(template, primary.data()).await;
        append(primary.data().join("postgresql.conf").as_path(), &settings);
        primary.start().await;
        let admin = connect(&primary.admin_url()).await;
        admin
            .batch_execute("CREATE ROLE app LOGIN")
            .await
            .expect("create the application's role");
        admin
            .batch_execute("CREATE DATABASE app OWNER app")
            .await
            .expect("create the application's database");
        let mut cluster = Cluster {
            servers: vec![primary],
            primary: 0,
            archive,
            tools,
            backups: 0,
            dir,
        };
        if options.standby {
            let mut standby = Server::new(tools, cluster.dir.path(), "node1");
            cluster.base_backup_into(standby.data(), true).await;
            standby.start().await;
            cluster.servers.push(standby);
            cluster.streaming().await;
        }
        Some(cluster)
    }

    /// The server that takes writes now.
    pub fn primary(&self) -> &Server {
        &self.servers[self.primary]
    }

    /// The other server: the standby, or the old primary after a failover until it is
    /// [rebuilt](Cluster::rebuild).
    pub fn standby(&self) -> &Server {
        &self.servers[1 - self.primary]
    }

    /// The application's connection string naming every server, first `node0`, with
    /// no `target_session_attrs`: the guard's pool asks for the one that takes writes.
    pub fn app_url(&self) -> String {
        self.every_host("app")
    }

    /// The superuser's connection string to the database `app` of whichever server
    /// takes writes.
    pub fn superuser_url(&self) -> String {
        self.every_host("postgres") + " target_session_attrs=read-write"
    }

    /// A connection string to the database `app`, as `user`, naming every server.
    fn every_host(&self, user: &str) -> String {
        let ports: Vec<String> = self.servers.iter().map(|s| s.port().to_string()).collect();
        let hosts = vec!["127.0.0.1"; self.servers.len()].join(",");
        format!(
            "host={hosts} port={} user={user} dbname=app connect_timeout=5",
            ports.join(",")
        )
    }

    /// The application's connection string to `server` alone.
    pub fn app_url_of(server: &Server) -> String {
        format!(
            "host=127.0.0.1 port={} user=app dbname=app connect_timeout=5",
            server.port()
        )
    }

    /// A superuser's connection to the database `app` of `server`.
    pub async fn superuser(server: &Server) -> Client {
        connect(&format!(
            "host=127.0.0.1 port={} user=postgres dbname=app",
            server.port()
        ))
        .await
    }

    /// The primary's timeline, as the guard reads it.
    pub async fn timeline(&self) -> i64 {
        Self::superuser(self.primary())
            .await
            .query_one(
                "SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint",
                &[],
            )
            .await
            .expect("read the timeline")
            .get(0)
    }

    /// Waits until the standby streams from the primary.
    pub async fn streaming(&self) {
        let primary = Self::superuser(self.primary()).await;
        let name = self.standby().name().to_owned();
        wait_for(&format!("{name} to stream from the primary"), || async {
            primary
                .query_opt(
                    "SELECT 1 FROM pg_stat_replication WHERE application_name = $1 \
                     AND state = 'streaming'",
                    &[&name],
                )
                .await
                .expect("read pg_stat_replication")
                .is_some()
        })
        .await;
    }

    /// Waits until the standby has replayed everything the primary has flushed, every
    /// commit acknowledged so far among it.
    pub async fn replayed(&self) {
        let primary = Self::superuser(self.primary()).await;
        let name = self.standby().name().to_owned();
        let flushed: String = primary
            .query_one("SELECT pg_current_wal_flush_lsn()::text", &[])
            .await
            .expect("read the flush position")
            .get(0);
        wait_for(&format!("{name} to replay up to {flushed}"), || async {
            primary
                .query_opt(
                    "SELECT 1 FROM pg_stat_replication WHERE application_name = $1 \
                     AND replay_lsn >= $2::text::pg_lsn",
                    &[&name, &flushed],
                )
                .await
                .expect("read pg_stat_replication")
                .is_some()
        })
        .await;
    }

    /// Stops replication to the standby: from now on nothing the primary commits
    /// reaches it. Returns once the standby's WAL receiver is gone and the primary has
    /// no sender for it.
    pub async fn cut(&self) {
        let standby = Self::superuser(self.standby()).await;
        // One statement at a time: `ALTER SYSTEM` refuses a multi-statement batch,
        // which runs as one transaction.
        for sql in [
            "ALTER SYSTEM SET primary_conninfo = ''",
            "SELECT pg_reload_conf()",
        ] {
            standby
                .batch_execute(sql)
                .await
                .expect("clear the standby's primary_conninfo");
        }
        let primary = Self::superuser(self.primary()).await;
        let name = self.standby().name().to_owned();
        wait_for(&format!("replication to {name} to stop"), || async {
            let receivers: i64 = standby
                .query_one("SELECT count(*) FROM pg_stat_wal_receiver", &[])
                .await
                .expect("read pg_stat_wal_receiver")
                .get(0);
            let senders: i64 = primary
                .query_one(
                    "SELECT count(*) FROM pg_stat_replication WHERE application_name = $1",
                    &[&name],
                )
                .await
                .expect("read pg_stat_replication")
                .get(0);
            receivers == 0 && senders == 0
        })
        .await;
    }

    /// Makes the standby synchronous: every commit on the primary returns once the
    /// standby has applied it (`synchronous_commit = remote_apply`).
    pub async fn synchronous(&self) {
        let primary = Self::superuser(self.primary()).await;
        let name = self.standby().name().to_owned();
        for sql in [
            format!("ALTER SYSTEM SET synchronous_standby_names = '\"{name}\"'"),
            "ALTER SYSTEM SET synchronous_commit = 'remote_apply'".to_owned(),
            "SELECT pg_reload_conf()".to_owned(),
        ] {
            primary
                .batch_execute(&sql)
                .await
                .expect("make the standby synchronous");
        }
        wait_for(&format!("{name} to be synchronous"), || async {
            primary
                .query_opt(
                    "SELECT 1 FROM pg_stat_replication WHERE application_name = $1 \
                     AND sync_state = 'sync'",
                    &[&name],
                )
                .await
                .expect("read pg_stat_replication")
                .is_some()
        })
        .await;
    }

    /// Kills the primary (`SIGKILL` to all its processes) and promotes the standby;
    /// returns once the new primary takes writes.
    pub async fn fail_over(&mut self) {
        self.servers[self.primary].kill();
        self.primary = 1 - self.primary;
        let new = Self::superuser(self.primary()).await;
        let promoted: bool = new
            .query_one("SELECT pg_promote(true, 60)", &[])
            .await
            .expect("promote the standby")
            .get(0);
        assert!(promoted, "the standby was not promoted within 60 s");
        wait_for("the new primary to leave recovery", || async {
            !new.query_one("SELECT pg_is_in_recovery()", &[])
                .await
                .expect("read pg_is_in_recovery()")
                .get::<_, bool>(0)
        })
        .await;
    }

    /// Rebuilds the old primary, killed by [`fail_over`](Cluster::fail_over), as the
    /// new primary's standby: `pg_rewind` (which finishes the killed server's crash
    /// recovery first) rewinds it to where the timelines parted, and it starts
    /// streaming from the new primary; returns once it has replayed all the new
    /// primary has flushed.
    pub async fn rebuild(&mut self) {
        let old = 1 - self.primary;
        assert!(
            !self.servers[old].is_running(),
            "the old primary still runs"
        );
        // `pg_rewind` reads the source's timeline from its control file, which a
        // promotion updates only at its next checkpoint: before it, the rewind sees
        // one timeline, finds nothing to do, and the old primary cannot follow.
        Self::superuser(self.primary())
            .await
            .batch_execute("CHECKPOINT")
            .await
            .expect("checkpoint the new primary");
        let source = self.primary().admin_url();
        let target = self.servers[old].data().display().to_string();
        self.tools
            .run(
                "pg_rewind",
                &[
                    "--target-pgdata",
                    &target,
                    "--source-server",
                    &source,
                    "--write-recovery-conf",
                    "--no-sync",
                ],
            )
            .await;
        self.servers[old].start().await;
        self.streaming().await;
        self.replayed().await;
    }

    /// Takes a base backup of the primary into a new directory, and returns it.
    pub async fn base_backup(&mut self) -> PathBuf {
        self.backups += 1;
        let path = self.dir.path().join(format!("backup{}", self.backups));
        self.base_backup_into(&path, false).await;
        path
    }

    async fn base_backup_into(&self, path: &Path, standby: bool) {
        let port = self.primary().port().to_string();
        let target = path.display().to_string();
        let mut args = vec![
            "-h",
            "127.0.0.1",
            "-p",
            &port,
            "-U",
            "postgres",
            "-D",
            &target,
            "-X",
            "stream",
            "-c",
            "fast",
            "--no-sync",
        ];
        if standby {
            args.push("-R");
        }
        self.tools.run("pg_basebackup", &args).await;
    }

    /// Waits until the primary has archived every WAL file up to the one it writes
    /// now, after switching to a new one (`pg_switch_wal()`).
    pub async fn archived(&self) {
        let primary = Self::superuser(self.primary()).await;
        let last: String = primary
            .query_one("SELECT pg_walfile_name(pg_switch_wal())", &[])
            .await
            .expect("switch to a new WAL file")
            .get(0);
        wait_for(&format!("{last} to be archived"), || async {
            primary
                .query_opt(
                    "SELECT 1 FROM pg_stat_archiver WHERE last_archived_wal >= $1",
                    &[&last],
                )
                .await
                .expect("read pg_stat_archiver")
                .is_some()
        })
        .await;
    }

    /// Restores the primary from `backup` to the restore point `target` (made with
    /// `pg_create_restore_point`), by archive recovery from the cluster's archive: the
    /// primary is killed, its data directory replaced by the backup, and started with
    /// `recovery_target_name`, promoting at the target. Returns once it takes writes.
    pub async fn restore(&mut self, backup: &Path, target: &str) {
        let archive = self
            .archive
            .clone()
            .expect("a cluster made with an archive");
        let index = self.primary;
        self.servers[index].kill();
        let data = self.servers[index].data().to_owned();
        std::fs::remove_dir_all(&data).expect("remove the primary's data directory");
        copy_tree(backup, &data).await;
        append(
            &data.join("postgresql.auto.conf"),
            &format!(
                "restore_command = 'cp {}/%f %p'\nrecovery_target_name = '{target}'\n\
                 recovery_target_action = 'promote'\n",
                archive.display()
            ),
        );
        let signal = data.join("recovery.signal");
        std::fs::write(&signal, "").expect("write recovery.signal");
        self.tools.hand_over(&signal);
        self.servers[index].start().await;
        let restored = Self::superuser(self.primary()).await;
        wait_for("the restored server to leave recovery", || async {
            !restored
                .query_one("SELECT pg_is_in_recovery()", &[])
                .await
                .expect("read pg_is_in_recovery()")
                .get::<_, bool>(0)
        })
        .await;
    }
}

/// Connects, and runs the connection on the runtime.
pub async fn connect(url: &str) -> Client {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .unwrap_or_else(|e| panic!("connect to {url}: {e}"));
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}

/// Polls `check` until it holds; fails the test after [`WAIT`].
pub async fn wait_for<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + WAIT;
    while !check().await {
        assert!(Instant::now() < deadline, "waited {WAIT:?} for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Appends `text` to the file at `path`.
fn append(path: &Path, text: &str) {
    use std::io::Write;
    let mut file = std::fs::File::options()
        .append(true)
        .open(path)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    file.write_all(text.as_bytes())
        .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

/// Copies the directory `from` to `to` with its owners and modes (`cp -a`).
async fn copy_tree(from: &Path, to: &Path) {
    let (from, to) = (from.to_owned(), to.to_owned());
    let status = tokio::task::spawn_blocking(move || {
        std::process::Command::new("cp")
            .arg("-a")
            .arg(&from)
            .arg(&to)
            .status()
    })
    .await
    .expect("the copy's thread")
    .expect("run cp");
    assert!(status.success(), "cp -a failed");
}

/// A data directory made by `initdb` once per build directory and binary version,
/// which each cluster copies (faster than running `initdb` each time): under
/// `CARGO_TARGET_TMPDIR`, made under a name of its own and renamed into place, so that
/// processes running at the same time never see half of one.
async fn template(tools: &'static Toolbox) -> &'static Path {
    static TEMPLATE: OnceCell<PathBuf> = OnceCell::const_new();
    TEMPLATE
        .get_or_init(|| async {
            let version = tools.run("postgres", &["--version"]).await;
            let digest = version
                .bytes()
                .chain(tools.bin("postgres").display().to_string().bytes())
                .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                    (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
                });
            let root = Path::new(env!("CARGO_TARGET_TMPDIR"));
            let path = root.join(format!("fenced-failover-template-{digest:016x}"));
            if path.join("PG_VERSION").is_file() {
                return path;
            }
            let staging = root.join(format!(
                "fenced-failover-template-{digest:016x}.{}",
                std::process::id()
            ));
            let _ = std::fs::remove_dir_all(&staging);
            std::fs::create_dir_all(&staging).expect("the template's directory");
            tools.hand_over(&staging);
            let target = staging.display().to_string();
            tools
                .run(
                    "initdb",
                    &[
                        "-D",
                        &target,
                        "-U",
                        "postgres",
                        "--auth=trust",
                        "-E",
                        "UTF8",
                        "--locale=C.UTF-8",
                        "--no-sync",
                    ],
                )
                .await;
            if std::fs::rename(&staging, &path).is_err() {
                // Another process put one in place first.
                let _ = std::fs::remove_dir_all(&staging);
            }
            path
        })
        .await
        .as_path()
}
