//! SQL Server: the protocol on a caller's tiberius client, one round trip per
//! statement (a statement and its row count in one batch).

use std::net::SocketAddr;
use std::time::Duration;

use fenced_guard::{Dialect, Executor, Key, Result, Store, Value};
use tiberius::ColumnData;
use tokio::net::TcpStream;
use tokio::sync::Mutex;
use tokio_util::compat::{Compat, TokioAsyncWriteCompatExt};
use uuid::Uuid;

use crate::REPLY_DELAY;
use crate::proxy::{Protocol, Proxy};
use crate::support::Place;
use crate::support::mssql::TestSchema;
use crate::support::row::payload;

const TTL: Duration = Duration::from_secs(60);

type Client = tiberius::Client<Compat<TcpStream>>;

/// A caller's client through a new TDS proxy that holds each reply for
/// [`REPLY_DELAY`]; TLS around the login only (`encrypt=false`), which the proxy
/// passes unread.
async fn client(url: &str) -> (Client, Proxy) {
    let config = tiberius::Config::from_ado_string(url).expect("FENCED_MSSQL_URL");
    let upstream: SocketAddr = tokio::net::lookup_host(config.get_addr())
        .await
        .expect("resolve the SQL Server host")
        .next()
        .expect("the SQL Server host has an address");
    let proxy = Proxy::start_with(upstream, Protocol::Tds)
        .await
        .expect("start the proxy");
    proxy.set_reply_delay(REPLY_DELAY);
    let through = format!(
        "{};server=tcp:{},{};encrypt=false",
        url.trim_end().trim_end_matches(';'),
        proxy.addr().ip(),
        proxy.addr().port()
    );
    let config = tiberius::Config::from_ado_string(&through).expect("a connection string");
    let tcp = TcpStream::connect(config.get_addr())
        .await
        .expect("connect");
    tcp.set_nodelay(true).unwrap();
    let client = Box::pin(tiberius::Client::connect(config, tcp.compat_write()))
        .await
        .expect("log in");
    (client, proxy)
}

/// Acquire, publish, release on `store`.
async fn cycle<E: Executor>(store: &Store<E>, key: &Key) {
    let lease = store.try_acquire(key.clone(), TTL).await.unwrap().unwrap();
    assert!(
        store
            .publish(&lease, &payload("r"))
            .await
            .unwrap()
            .is_applied()
    );
    assert!(store.release(&lease).await.unwrap().is_applied());
}

#[tokio::test]
async fn the_protocol_on_a_callers_tiberius_client_waits_once_per_statement() {
    let Some(schema) = TestSchema::create("fenced_rtt_", 1).await else {
        return;
    };
    let own = Store::new(schema.connect().await, crate::postgres::reports(&schema));
    own.create_schema().await.unwrap();
    let (mut client, proxy) = client(schema.url()).await;
    let key = Key::from(Uuid::new_v4());
    own.provision(key.clone()).await.unwrap();

    proxy.reset_round_trips();
    cycle(&own.on(&mut client).unwrap(), &key).await;
    let waits = proxy.round_trips();

    // Negative control: each write's count asked for again in a batch of its own.
    let control = Store::new(CountAfter(Mutex::new(&mut client)), own.table().clone());
    proxy.reset_round_trips();
    cycle(&control, &key).await;
    let control_waits = proxy.round_trips();
    println!("tiberius client: {waits} round trips; count read apart: {control_waits}");
    assert_eq!(
        waits, 3,
        "acquire, publish and release on the caller's client"
    );
    assert_eq!(
        control_waits, 5,
        "two counts read in batches of their own were not counted"
    );
    drop(control);
    drop(client);
    schema.teardown().await;
}

/// A caller's client run as an executor that asks for each write's count again in a
/// batch of its own: one round trip more per write, for the negative control.
struct CountAfter<'a>(Mutex<&'a mut Client>);

impl Executor for CountAfter<'_> {
    fn dialect(&self) -> Dialect {
        Dialect::Mssql
    }

    async fn execute(&self, sql: &str, params: &[Value]) -> Result<u64> {
        let mut client = self.0.lock().await;
        let params: Vec<&dyn tiberius::ToSql> = params.iter().map(|p| p as _).collect();
        let rows = client
            .execute(sql, &params)
            .await
            .expect("the statement")
            .total();
        // The request the control is about: a second batch, waited for. Its answer is
        // not used; tiberius's own count is the statement's on the test's plain table.
        client
            .simple_query("SELECT CAST(@@ROWCOUNT AS bigint)")
            .await
            .expect("the count")
            .into_results()
            .await
            .expect("the count's rows");
        Ok(rows)
    }

    async fn query_row(&self, sql: &str, params: &[Value]) -> Result<Option<Vec<Value>>> {
        let mut client = self.0.lock().await;
        let params: Vec<&dyn tiberius::ToSql> = params.iter().map(|p| p as _).collect();
        let row = client
            .query(sql, &params)
            .await
            .expect("the statement")
            .into_results()
            .await
            .expect("its rows")
            .into_iter()
            .next_back()
            .and_then(|rows| rows.into_iter().next());
        Ok(row.map(|row| {
            row.into_iter()
                .map(|cell| match cell {
                    ColumnData::I64(Some(v)) => Value::I64(v),
                    other => panic!("the control decodes no {other:?}"),
                })
                .collect()
        }))
    }

    async fn execute_batch(&self, sql: &str) -> Result<()> {
        let mut client = self.0.lock().await;
        client
            .simple_query(sql)
            .await
            .expect(sql)
            .into_results()
            .await
            .expect(sql);
        Ok(())
    }
}
