//! SQL Server for the fault tests, at `FENCED_MSSQL_URL` (see `support::mssql`): one
//! schema with a random name per run, emptied and dropped at the end, and each worker's
//! connections through its own TDS [`Proxy`].
//!
//! The workers connect with `encrypt=false`: TLS protects the login (the password) and
//! the statements travel as plain TDS, which the proxy must read to cut a connection
//! at the right statement. The administrative connection, which makes the schema and
//! reads the trace, keeps the connection string's own encryption.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use fenced_guard::{
    Candidates, Dialect, Error, Executor, FencedTable, Lease, Mssql, MssqlOptions, Outcome, Store,
    Value,
};
use tokio::net::TcpStream;
use tokio_util::compat::{Compat, TokioAsyncWriteCompatExt};
use uuid::Uuid;

use crate::history::{
    Bench, Caller, CallerFuture, CallerOutcome, Mode, Op, TraceEntry, columns, job_table, write,
};
use crate::proxy::{Protocol, Proxy};
use crate::support::Place;
use crate::support::mssql::{TestSchema, connect, is_babelfish};

/// A schema of its own on the server, and where the server listens.
pub struct MssqlBench {
    schema: TestSchema,
    upstream: SocketAddr,
    babelfish: bool,
    /// The next key of the warm-up table.
    warm_keys: AtomicI64,
}

/// `url` with the server replaced by the proxy at `proxy` and `encrypt=false` (TLS for
/// the login only). tiberius takes the last value of a key that appears twice, so the
/// two are appended.
fn through(url: &str, proxy: SocketAddr) -> String {
    format!(
        "{};server=tcp:{},{};encrypt=false",
        url.trim_end().trim_end_matches(';'),
        proxy.ip(),
        proxy.port()
    )
}

impl MssqlBench {
    /// Connects and makes the schema; `None` when the SQL Server tests do not run here.
    /// Panics with the driver's answer when the server is unreachable.
    pub async fn setup() -> Option<MssqlBench> {
        let schema = TestSchema::create("fenced_faults_", 1).await?;
        let config = tiberius::Config::from_ado_string(schema.url())
            .expect("FENCED_MSSQL_URL is an ADO.NET connection string");
        let upstream = tokio::net::lookup_host(config.get_addr())
            .await
            .expect("resolve the SQL Server host")
            .next()
            .expect("the SQL Server host has an address");
        let babelfish = is_babelfish(schema.admin()).await;
        Some(MssqlBench {
            schema,
            upstream,
            babelfish,
            warm_keys: AtomicI64::new(1),
        })
    }

    /// A pool of one connection to the server through a new TDS proxy.
    pub async fn through_proxy(&self) -> (Mssql, Proxy) {
        let proxy = Proxy::start_with(self.upstream, Protocol::Tds)
            .await
            .expect("start the proxy");
        let url = through(self.schema.url(), proxy.addr());
        let backend = connect(&url, MssqlOptions::default().max_connections(1)).await;
        (backend, proxy)
    }

    /// The administrative connection (no proxy).
    pub fn admin(&self) -> &Mssql {
        self.schema.admin()
    }

    /// A table name inside this run's schema.
    pub fn qualified(&self, name: &str) -> String {
        self.schema.qualified(name)
    }

    /// Creates the fenced table `name` and its trace: an `AFTER UPDATE` trigger that
    /// writes one row per changed row (`inserted` joined with `deleted` on the key) into
    /// `{name}Trace`, numbered by an `IDENTITY` taken while the statement holds the row.
    /// The trigger leaves `NOCOUNT` off, as such triggers often do: its row counts reach
    /// the client beside the statement's own, and the guard's outcomes must not depend
    /// on them.
    async fn create_traced(&self, name: &str) {
        let table = job_table(&self.qualified(name));
        Store::new(self.admin().clone(), table.clone())
            .create_schema()
            .await
            .expect("create the fenced table");
        let d = Dialect::Mssql;
        let c = |name: &str| fenced_guard::Identifier::new(name).unwrap().quoted(d);
        let trace = quoted(&self.qualified(&format!("{name}Trace")));
        self.admin()
            .execute_batch(&format!(
                "CREATE TABLE {trace} ([Seq] bigint IDENTITY(1, 1) PRIMARY KEY, \
                 [JobId] bigint NOT NULL, [OldGeneration] bigint NOT NULL, \
                 [Generation] bigint NOT NULL, [OldWriteId] bigint NULL, \
                 [WriteId] bigint NULL, [WriterGeneration] bigint NULL, \
                 [WriteKind] nvarchar(max) NULL)"
            ))
            .await
            .expect("create the trace table");
        // `CREATE TRIGGER` must be the only statement of its batch.
        let key = table.key_column().quoted(d);
        let generation = table.generation_column().quoted(d);
        self.admin()
            .execute_batch(&format!(
                "CREATE TRIGGER {trigger} ON {table} AFTER UPDATE AS \
                 INSERT INTO {trace} ([JobId], [OldGeneration], [Generation], [OldWriteId], \
                 [WriteId], [WriterGeneration], [WriteKind]) \
                 SELECT i.{key}, d.{generation}, i.{generation}, d.{write_id}, i.{write_id}, \
                 i.{writer}, i.{kind} FROM inserted AS i JOIN deleted AS d ON d.{key} = i.{key}",
                trigger = quoted(&self.qualified(&format!("{name}Traced"))),
                table = table.name().quoted(d),
                write_id = c("WriteId"),
                writer = c("WriterGeneration"),
                kind = c("WriteKind"),
            ))
            .await
            .expect("create the trace trigger");
    }

    /// Runs every statement the workload sends once on `backend`'s connection, on a row
    /// of the warm-up table, and fails on any error. A new connection to Babelfish
    /// parses each T-SQL statement shape slowly the first time (seconds on a loaded
    /// machine), far past the workload's ttl; warm, the same statements take
    /// milliseconds. The workers' connections are warmed before the run's clock
    /// starts; those reopened after a cut are not, and their first statements may find
    /// their lease expired, which the history allows.
    async fn warm(&self, backend: &Mssql) {
        let store = Store::new(backend.clone(), job_table(&self.qualified("Warm")));
        let key = self.warm_keys.fetch_add(1, Ordering::SeqCst);
        let ttl = Duration::from_secs(60);
        store.provision(key).await.expect("warm-up: provision");
        let lease = store
            .try_acquire(key, ttl)
            .await
            .expect("warm-up: acquire a row of a table with a trigger")
            .expect("warm-up: the row is free");
        let cols = |op| columns(op, lease.generation(), 0, -1);
        assert!(
            store
                .renew(&lease)
                .await
                .expect("warm-up: renew")
                .is_applied(),
            "warm-up: a fresh lease renews"
        );
        // From here only the statements' shapes matter, not their outcomes: the
        // naive writes and the releasing publications end the lease on the way.
        for mode in [Mode::Fenced, Mode::Naive] {
            for op in [Op::Update, Op::Publish, Op::PublishAndRelease] {
                warm_write(&store, mode, op, &lease, &cols(op)).await;
            }
        }
        let op = Uuid::new_v4();
        for publish_and_release in [false, true] {
            let attempt = if publish_and_release {
                store
                    .publish_and_release_op(&lease, op, &cols(Op::PublishAndRelease))
                    .await
            } else {
                store.publish_op(&lease, op, &cols(Op::Publish)).await
            };
            let _ = attempt.expect("warm-up: publish with an operation id");
        }
        store.resolve(op).await.expect("warm-up: resolve");
        let _ = store.release(&lease).await.expect("warm-up: release");
        // The claiming worker's two shapes: any free row, and among a key list.
        for candidates in [Candidates::keys([key]), Candidates::any()] {
            let claimed = store
                .claim(&candidates, 1, ttl)
                .await
                .expect("warm-up: claim");
            for lease in &claimed {
                let _ = store.release(lease).await.expect("warm-up: release");
            }
        }
        // A fenced transaction's statements, and the advancer's.
        let lease = store
            .try_acquire(key, ttl)
            .await
            .expect("warm-up: acquire again")
            .expect("warm-up: the row was released");
        let tx = store
            .transaction(&lease, ttl)
            .await
            .expect("warm-up: begin a fenced transaction")
            .expect("warm-up: the lease holds");
        let _ = tx
            .store()
            .update(&lease, &cols(Op::Update))
            .await
            .expect("warm-up: update in a fenced transaction");
        tx.commit().await.expect("warm-up: commit");
        let _ = store.release(&lease).await.expect("warm-up: release");
        store
            .advance_epoch()
            .await
            .expect("warm-up: advance the epoch");
    }

    /// Drops the schema and everything in it.
    pub async fn teardown(&self) {
        Place::teardown(&self.schema).await;
    }
}

async fn warm_write(
    store: &Store<Mssql>,
    mode: Mode,
    op: Op,
    lease: &Lease,
    columns: &[(&str, Value)],
) {
    let _ = write(store, mode, op, lease, columns)
        .await
        .unwrap_or_else(|error| panic!("warm-up: {} {op:?}: {error:?}", mode.name()));
}

fn quoted(name: &str) -> String {
    fenced_guard::QualifiedName::parse(name)
        .expect("a valid name")
        .quoted(Dialect::Mssql)
}

/// A worker's own tiberius client, as a service keeps one: tiberius has no transaction
/// type, so the service begins one with `BEGIN TRANSACTION`, and a fence asked for
/// without it is refused by the statement itself (`@@TRANCOUNT`).
struct OwnClient(tiberius::Client<Compat<TcpStream>>);

impl OwnClient {
    async fn batch(&mut self, sql: &str) -> fenced_guard::Result<()> {
        self.0
            .simple_query(sql)
            .await
            .map_err(Error::Mssql)?
            .into_results()
            .await
            .map_err(Error::Mssql)?;
        Ok(())
    }
}

impl Caller<Mssql> for OwnClient {
    fn fenced_update<'a>(
        &'a mut self,
        store: &'a Store<Mssql>,
        lease: &'a Lease,
        columns: &'a [(&'static str, Value)],
        autocommit_first: bool,
    ) -> CallerFuture<'a> {
        Box::pin(async move {
            let autocommit_refused = if autocommit_first {
                match store.on(&mut self.0)?.fence(lease).await {
                    Err(Error::NotInTransaction(_)) => Some(true),
                    Ok(Some(_)) => Some(false),
                    Ok(None) => None,
                    Err(other) => return Err(other),
                }
            } else {
                None
            };
            self.batch("BEGIN TRANSACTION").await?;
            let outcome = async {
                match store.on(&mut self.0)?.fence(lease).await? {
                    Some(fenced) => fenced.store().update(lease, columns).await,
                    None => Ok(Outcome::Refused),
                }
            }
            .await;
            let end = if matches!(outcome, Ok(Outcome::Applied)) {
                "COMMIT TRANSACTION"
            } else {
                "IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION"
            };
            self.batch(end).await?;
            Ok(CallerOutcome {
                outcome: outcome?,
                autocommit_refused,
            })
        })
    }

    fn can_try_autocommit(&self) -> bool {
        true
    }
}

impl Bench for MssqlBench {
    type Backend = Mssql;

    async fn caller(&self) -> Option<Box<dyn Caller<Mssql>>> {
        let config = tiberius::Config::from_ado_string(self.schema.url())
            .expect("a valid connection string");
        let tcp = TcpStream::connect(config.get_addr())
            .await
            .expect("connect");
        tcp.set_nodelay(true).expect("nodelay");
        let client = Box::pin(tiberius::Client::connect(config, tcp.compat_write()))
            .await
            .expect("log in");
        let mut own = OwnClient(client);
        // Babelfish's parser caches are per connection: warm this one as the pool's.
        own.batch(crate::support::mssql::WARM_UP)
            .await
            .expect("warm the connection");
        Some(Box::new(own))
    }

    fn name(&self) -> &'static str {
        if self.babelfish {
            "sqlserver-babelfish"
        } else {
            "sqlserver"
        }
    }

    fn table(&self) -> FencedTable {
        job_table(&self.qualified("Job"))
    }

    /// The workload's table and, for the warm-up, one like it, each with its trace.
    async fn prepare(&self) {
        self.create_traced("Job").await;
        self.create_traced("Warm").await;
    }

    async fn worker(&self) -> (Store<Mssql>, Option<Proxy>) {
        let (backend, proxy) = self.through_proxy().await;
        (Store::new(backend, self.table()), Some(proxy))
    }

    async fn warm(&self, store: &Store<Mssql>) {
        MssqlBench::warm(self, store.backend()).await;
    }

    /// Read with a tiberius client of its own: the backend returns one row per query.
    async fn trace(&self) -> Vec<TraceEntry> {
        let config = tiberius::Config::from_ado_string(self.schema.url())
            .expect("FENCED_MSSQL_URL is an ADO.NET connection string");
        let tcp = tokio::net::TcpStream::connect(config.get_addr())
            .await
            .expect("reach SQL Server");
        tcp.set_nodelay(true).expect("set TCP_NODELAY");
        let mut client = tiberius::Client::connect(config, tcp.compat_write())
            .await
            .expect("log in to SQL Server");
        let sql = format!(
            "SELECT [Seq], [JobId], [OldGeneration], [Generation], [OldWriteId], [WriteId], \
             [WriterGeneration], [WriteKind] FROM {} ORDER BY [Seq]",
            quoted(&self.qualified("JobTrace"))
        );
        let rows = client
            .simple_query(sql)
            .await
            .expect("read the trace")
            .into_first_result()
            .await
            .expect("read the trace's rows");
        let bigint = |row: &tiberius::Row, i: usize| -> Option<i64> {
            row.try_get::<i64, _>(i).expect("a bigint column")
        };
        rows.iter()
            .map(|row| TraceEntry {
                seq: bigint(row, 0).expect("Seq"),
                row: bigint(row, 1).expect("JobId"),
                old_generation: bigint(row, 2).expect("OldGeneration"),
                generation: bigint(row, 3).expect("Generation"),
                old_write_id: bigint(row, 4),
                write_id: bigint(row, 5),
                writer_generation: bigint(row, 6),
                kind: row
                    .try_get::<&str, _>(7)
                    .expect("a text column")
                    .map(str::to_owned),
            })
            .collect()
    }

    async fn teardown(&self) {
        MssqlBench::teardown(self).await;
    }
}

#[cfg(test)]
mod tests {
    use super::through;

    #[test]
    fn the_proxied_string_names_the_proxy_and_encrypts_only_the_login() {
        let url = "server=tcp:db.example,1433;user=sa;password='a;b';encrypt=true;";
        let addr = "127.0.0.1:4000".parse().unwrap();
        let proxied = through(url, addr);
        assert_eq!(
            proxied,
            "server=tcp:db.example,1433;user=sa;password='a;b';encrypt=true\
             ;server=tcp:127.0.0.1,4000;encrypt=false"
        );
        let config = tiberius::Config::from_ado_string(&proxied).unwrap();
        assert_eq!(config.get_addr(), "127.0.0.1:4000");
    }
}
