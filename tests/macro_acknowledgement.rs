//! A `#[fenced_write]` method carrying an operation id, whose acknowledgement was cut:
//! through a TCP proxy that lets the statement commit on the server and drops its
//! reply, on PostgreSQL and on SQL Server (`FENCED_MSSQL_URL`; a failure when `CI` is
//! set without it). The call is an error that may have committed; the id resolves
//! applied, and a retry with it writes nothing. Negative control: the same cut under the
//! plain method leaves nothing to tell whether its write landed.
//!
//! SQLite has no wire to cut: its operation ids are tested in `macro_e2e`.

#![allow(missing_docs, unreachable_pub)]

#[allow(dead_code)]
#[path = "../guard/tests/faults/proxy.rs"]
mod proxy;

use std::time::Duration;

use fenced::{
    Backend, ColumnType, Executor, FencedTable, Lease, OperationOutcome, Outcome, Resolution,
    Store, Value, fenced_write,
};
use proxy::{Fault, Proxy};
use uuid::Uuid;

pub struct Reports<B> {
    store: Store<B>,
}

impl<B: Backend> Reports<B> {
    #[fenced_write(
        table = "OperationReport",
        sql = "UPDATE OperationReport SET payload = @payload",
        store = self.store,
        operation = op,
    )]
    async fn save_once(
        &self,
        lease: &Lease,
        op: Uuid,
        payload: &str,
    ) -> fenced::Result<OperationOutcome>;

    #[fenced_write(
        table = "OperationReport",
        sql = "UPDATE OperationReport SET payload = @payload",
        store = self.store,
    )]
    async fn save(&self, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;
}

fn table() -> FencedTable {
    FencedTable::builder()
        .table("OperationReport")
        .epoch_table("OperationReportEpoch")
        .operations_table("OperationReportOperation")
        .column("payload", ColumnType::Text)
        .build()
        .expect("valid table")
}

const TTL: Duration = Duration::from_secs(60);

async fn payload<B: Backend>(store: &Store<B>, id: Uuid) -> Option<String> {
    let d = store.dialect();
    let sql = format!(
        "SELECT payload FROM {} WHERE {} = {}",
        store.table().name().quoted(d),
        store.table().key_column().quoted(d),
        d.placeholder(1)
    );
    let row = store
        .backend()
        .query_row(&sql, &[Value::Uuid(id)])
        .await
        .expect("read the row")
        .expect("the row exists");
    row[0].as_str().map(str::to_owned)
}

/// The schedule, on `reports` (through the proxy) and `direct` (not): the cut, the
/// resolution, the retry, and the control.
async fn cut_and_resolved<B: Backend>(reports: Reports<B>, direct: Store<B>, proxy: &Proxy) {
    direct.create_schema().await.expect("create schema");
    let id = Uuid::new_v4();
    assert!(direct.provision(id).await.expect("provision"));
    let lease = reports
        .store
        .try_acquire(id, TTL)
        .await
        .expect("acquire")
        .expect("the row is free");
    let op = Uuid::new_v4();

    proxy.arm(Fault::CutAfterCommit);
    let lost = reports.save_once(&lease, op, "report").await;
    assert_eq!(proxy.fired(), 1, "the cut happened on the write");
    assert!(
        lost.as_ref().is_err_and(fenced::Error::may_have_committed),
        "a lost acknowledgement is an error that may have committed: {lost:?}"
    );
    assert_eq!(
        direct.resolve(op).await.expect("resolve"),
        Resolution::Applied {
            generation: lease.generation()
        }
    );
    assert_eq!(payload(&direct, id).await.as_deref(), Some("report"));
    let retry = reports.save_once(&lease, op, "again").await.expect("retry");
    assert_eq!(
        retry,
        OperationOutcome::AlreadyApplied {
            generation: lease.generation()
        }
    );
    assert_eq!(payload(&direct, id).await.as_deref(), Some("report"));

    // Negative control: the plain method, cut the same way, landed, and nothing says so.
    proxy.arm(Fault::CutAfterCommit);
    let lost = reports.save(&lease, "plain").await;
    assert!(lost.is_err(), "{lost:?}");
    assert_eq!(payload(&direct, id).await.as_deref(), Some("plain"));
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres() {
    use fenced::Postgres;

    let url = std::env::var("FENCED_PG_URL")
        .unwrap_or_else(|_| "host=127.0.0.1 port=5432 user=postgres dbname=test".to_owned());
    let admin = Postgres::connect_with(&url, 1)
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL is not reachable at `{url}`: {e}"));
    let schema = format!("fenced_macro_ack_{}", Uuid::new_v4().simple());
    admin
        .execute_batch(&format!("CREATE SCHEMA \"{schema}\""))
        .await
        .expect("create the test schema");
    let config: fenced::tokio_postgres::Config = url.parse().expect("a connection string");
    let host = config.get_hosts().first().cloned();
    let upstream = match host {
        Some(fenced::tokio_postgres::config::Host::Tcp(host)) => {
            let port = config.get_ports().first().copied().unwrap_or(5432);
            tokio::net::lookup_host((host.as_str(), port))
                .await
                .expect("resolve the host")
                .next()
                .expect("an address")
        }
        other => panic!("the proxy needs a TCP host, not {other:?}"),
    };
    let proxy = Proxy::start(upstream).await.expect("start the proxy");
    // The same login, at the proxy, in the clear (the proxy reads the protocol).
    let mut through = fenced::tokio_postgres::Config::new();
    if let Some(user) = config.get_user() {
        through.user(user);
    }
    if let Some(dbname) = config.get_dbname() {
        through.dbname(dbname);
    }
    if let Some(password) = config.get_password() {
        through.password(password);
    }
    through
        .host("127.0.0.1")
        .port(proxy.addr().port())
        .ssl_mode(fenced::tokio_postgres::config::SslMode::Disable)
        .options(format!("-c search_path={schema}"));
    let through = fenced::Postgres::from_config(through, fenced::tokio_postgres::NoTls, 1);
    let direct = format!("{url} options='-c search_path={schema}'");
    let reports = Reports {
        store: Store::new(through, table()),
    };
    let direct = Store::new(Postgres::connect_with(&direct, 1).await.unwrap(), table());
    cut_and_resolved(reports, direct, &proxy).await;
    admin
        .execute_batch(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
        .await
        .expect("drop the test schema");
}

#[cfg(feature = "mssql")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sql_server() {
    use fenced::{Mssql, MssqlOptions};

    let Ok(url) = std::env::var("FENCED_MSSQL_URL") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but FENCED_MSSQL_URL is not: the SQL Server tests must run in CI"
        );
        eprintln!("SQL Server tests did not run: FENCED_MSSQL_URL is not set");
        return;
    };
    // The server's address, and the same connection string pointed at the proxy, with
    // the statements in the clear (the proxy reads TDS, not TLS).
    let mut server = None;
    let mut through = Vec::new();
    for part in url.split(';').filter(|p| !p.is_empty()) {
        let (key, value) = part.split_once('=').unwrap_or((part, ""));
        match key.trim().to_ascii_lowercase().as_str() {
            "server" => server = Some(value.trim().trim_start_matches("tcp:").to_owned()),
            "encrypt" => {}
            _ => through.push(part.to_owned()),
        }
    }
    let server = server.expect("FENCED_MSSQL_URL names its server");
    let (host, port) = server.split_once(',').unwrap_or((&server, "1433"));
    let upstream = tokio::net::lookup_host((host, port.parse::<u16>().expect("a port")))
        .await
        .expect("resolve the host")
        .next()
        .expect("an address");
    let proxy = Proxy::start_with(upstream, proxy::Protocol::Tds)
        .await
        .expect("start the proxy");
    through.push(format!("server=tcp:127.0.0.1,{}", proxy.addr().port()));
    through.push("encrypt=false".to_owned());
    let options = || MssqlOptions::default().max_connections(1);
    let direct = Mssql::connect_with_options(&url, options())
        .await
        .expect("connect");
    drop_tables(&direct).await;
    let reports = Reports {
        store: Store::new(
            Mssql::connect_with_options(&through.join(";"), options())
                .await
                .expect("connect through the proxy"),
            table(),
        ),
    };
    let store = Store::new(direct.clone(), table());
    cut_and_resolved(reports, store, &proxy).await;
    drop_tables(&direct).await;
}

#[cfg(feature = "mssql")]
async fn drop_tables(backend: &fenced::Mssql) {
    backend
        .execute_batch(
            "DROP TABLE IF EXISTS [OperationReport]; DROP TABLE IF EXISTS [OperationReportEpoch]; \
             DROP TABLE IF EXISTS [OperationReportOperation]",
        )
        .await
        .expect("drop the test tables");
}
