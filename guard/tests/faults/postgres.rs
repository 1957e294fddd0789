//! PostgreSQL for the fault tests: one schema with a random name per run, dropped at the
//! end, and each worker's connections through its own [`Proxy`]. The server must be
//! reachable over TCP; the tests fail (never skip) otherwise.

use std::net::SocketAddr;

use fenced_guard::{Dialect, Error, Executor, FencedTable, Lease, Outcome, Postgres, Store, Value};
use tokio_postgres::NoTls;
use tokio_postgres::config::{Host, SslMode};

use crate::history::{Bench, Caller, CallerFuture, CallerOutcome, TraceEntry, job_table};
use crate::proxy::Proxy;
use crate::support::Place;
use crate::support::postgres::{TestSchema, url};

/// A schema of its own on the server, and where the server listens.
pub struct PgBench {
    schema: TestSchema,
    config: tokio_postgres::Config,
    upstream: SocketAddr,
}

impl PgBench {
    /// Connects, makes the schema. Panics with instructions when the server is
    /// unreachable.
    pub async fn setup() -> PgBench {
        let schema = TestSchema::create("fenced_faults_", 1).await;
        let url = url();
        let config: tokio_postgres::Config = url.parse().expect("FENCED_PG_URL parses");
        let host = match config.get_hosts().first() {
            Some(Host::Tcp(host)) => host.clone(),
            None => "localhost".to_owned(),
            #[allow(unreachable_patterns)]
            Some(_) => panic!("the fault tests reach PostgreSQL over TCP; `{url}` names a socket"),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let upstream = tokio::net::lookup_host((host.as_str(), port))
            .await
            .expect("resolve the PostgreSQL host")
            .next()
            .expect("the PostgreSQL host has an address");
        PgBench {
            schema,
            config,
            upstream,
        }
    }

    /// A pool of one connection to the server through a new proxy.
    pub async fn through_proxy(&self) -> (Postgres, Proxy) {
        let proxy = Proxy::start(self.upstream).await.expect("start the proxy");
        let mut config = tokio_postgres::Config::new();
        config
            .host("127.0.0.1")
            .port(proxy.addr().port())
            .ssl_mode(SslMode::Disable)
            .connect_timeout(std::time::Duration::from_secs(5));
        if let Some(user) = self.config.get_user() {
            config.user(user);
        }
        if let Some(dbname) = self.config.get_dbname() {
            config.dbname(dbname);
        }
        if let Some(password) = self.config.get_password() {
            config.password(password);
        }
        (Postgres::from_config(config, NoTls, 1), proxy)
    }

    /// The administrative connection (no proxy).
    pub fn admin(&self) -> &Postgres {
        self.schema.admin()
    }

    /// A table name inside this run's schema.
    pub fn qualified(&self, name: &str) -> String {
        self.schema.qualified(name)
    }

    /// Drops the schema.
    pub async fn teardown(&self) {
        Place::teardown(&self.schema).await;
    }
}

/// A worker's own tokio-postgres client, as a service keeps one. A fence on it outside
/// a transaction does not compile (`store.on(&client)` is no `InTransaction`), so it
/// never asks for one in autocommit.
struct OwnClient(tokio_postgres::Client);

impl Caller<Postgres> for OwnClient {
    fn fenced_update<'a>(
        &'a mut self,
        store: &'a Store<Postgres>,
        lease: &'a Lease,
        columns: &'a [(&'static str, Value)],
        _autocommit_first: bool,
    ) -> CallerFuture<'a> {
        Box::pin(async move {
            let mut tx = self.0.transaction().await.map_err(Error::Postgres)?;
            let outcome = match store.on(&mut tx)?.fence(lease).await? {
                Some(fenced) => fenced.store().update(lease, columns).await?,
                None => Outcome::Refused,
            };
            if outcome.is_applied() {
                tx.commit().await.map_err(Error::Postgres)?;
            } else {
                tx.rollback().await.map_err(Error::Postgres)?;
            }
            Ok(CallerOutcome {
                outcome,
                autocommit_refused: None,
            })
        })
    }

    fn can_try_autocommit(&self) -> bool {
        false
    }
}

impl Bench for PgBench {
    type Backend = Postgres;

    async fn caller(&self) -> Option<Box<dyn Caller<Postgres>>> {
        let (client, connection) = tokio_postgres::connect(&url(), NoTls)
            .await
            .expect("connect to postgresql");
        tokio::spawn(connection);
        Some(Box::new(OwnClient(client)))
    }

    fn name(&self) -> &'static str {
        "postgresql"
    }

    fn table(&self) -> FencedTable {
        job_table(&self.qualified("Job"))
    }

    async fn prepare(&self) {
        let store = Store::new(self.admin().clone(), self.table());
        store
            .create_schema()
            .await
            .expect("create the fenced table");
        let sql = trace_ddl(
            store.table(),
            &self.qualified("JobTrace"),
            &self.qualified("JobTraceRow"),
        );
        self.admin()
            .execute_batch(&sql)
            .await
            .expect("create the trace table and its trigger");
    }

    async fn worker(&self) -> (Store<Postgres>, Option<Proxy>) {
        let (backend, proxy) = self.through_proxy().await;
        (Store::new(backend, self.table()), Some(proxy))
    }

    async fn trace(&self) -> Vec<TraceEntry> {
        let client = self.admin().client().await.expect("a connection");
        read_trace(&client, &self.qualified("JobTrace")).await
    }

    async fn teardown(&self) {
        PgBench::teardown(self).await;
    }
}

/// The trace table `trace` and the trigger (its function `function`) that copies every
/// changed row image of the workload's `table` into it, in the same statement.
pub fn trace_ddl(table: &FencedTable, trace: &str, function: &str) -> String {
    let d = Dialect::Postgres;
    let q = |name: &str| fenced_guard::QualifiedName::parse(name).unwrap().quoted(d);
    let c = |name: &str| fenced_guard::Identifier::new(name).unwrap().quoted(d);
    let generation = table.generation_column().quoted(d);
    format!(
        "CREATE TABLE {trace} (\"Seq\" bigserial PRIMARY KEY, \"JobId\" bigint NOT NULL, \
             \"OldGeneration\" bigint NOT NULL, \"Generation\" bigint NOT NULL, \
             \"OldWriteId\" bigint NULL, \"WriteId\" bigint NULL, \
             \"WriterGeneration\" bigint NULL, \"WriteKind\" text NULL);
             CREATE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS $body$
             BEGIN
               INSERT INTO {trace} (\"JobId\", \"OldGeneration\", \"Generation\", \
                 \"OldWriteId\", \"WriteId\", \"WriterGeneration\", \"WriteKind\")
               VALUES (NEW.{key}, OLD.{generation}, NEW.{generation}, OLD.{write_id}, \
                 NEW.{write_id}, NEW.{writer}, NEW.{kind});
               RETURN NULL;
             END
             $body$;
             CREATE TRIGGER \"JobTraceRow\" AFTER UPDATE ON {table} FOR EACH ROW \
             EXECUTE FUNCTION {function}();",
        trace = q(trace),
        function = q(function),
        key = table.key_column().quoted(d),
        write_id = c("WriteId"),
        writer = c("WriterGeneration"),
        kind = c("WriteKind"),
        table = table.name().quoted(d),
    )
}

/// The trace table `trace`, ordered by sequence number.
pub async fn read_trace(client: &tokio_postgres::Client, trace: &str) -> Vec<TraceEntry> {
    let sql = format!(
        "SELECT \"Seq\", \"JobId\", \"OldGeneration\", \"Generation\", \"OldWriteId\", \
             \"WriteId\", \"WriterGeneration\", \"WriteKind\" FROM {} ORDER BY \"Seq\"",
        fenced_guard::QualifiedName::parse(trace)
            .unwrap()
            .quoted(Dialect::Postgres)
    );
    client
        .query(&sql, &[])
        .await
        .expect("read the trace")
        .iter()
        .map(|row| TraceEntry {
            seq: row.get(0),
            row: row.get(1),
            old_generation: row.get(2),
            generation: row.get(3),
            old_write_id: row.get(4),
            write_id: row.get(5),
            writer_generation: row.get(6),
            kind: row.get(7),
        })
        .collect()
}
