//! PostgreSQL: the protocol on a caller's tokio-postgres client, and a fenced
//! transaction on the guard's pool against a plain one.

use std::net::SocketAddr;
use std::time::Duration;

use fenced_guard::tokio_postgres::config::{Host, SslMode};
use fenced_guard::tokio_postgres::{self, Client, NoTls};
use fenced_guard::{
    Dialect, Executor, FencedTable, Identifier, Key, Lease, Lend, Postgres, Result, Store, Value,
    dialect,
};
use uuid::Uuid;

use crate::REPLY_DELAY;
use crate::proxy::Proxy;
use crate::support::Place;
use crate::support::lease::lock_params;
use crate::support::lines::{create_lines_table, insert_line};
use crate::support::postgres::{TestSchema, url};
use crate::support::row::payload;

const TTL: Duration = Duration::from_secs(60);
const TIMEOUT: Duration = Duration::from_secs(30);

/// The lines a transaction writes, each an `INSERT` of its own.
const LINES: usize = 3;

/// A schema of its own, and the server behind the proxies.
pub struct Wire {
    pub schema: TestSchema,
    config: tokio_postgres::Config,
    upstream: SocketAddr,
}

impl Wire {
    pub async fn setup(prefix: &str) -> Wire {
        let schema = TestSchema::create(prefix, 1).await;
        let config: tokio_postgres::Config = url().parse().expect("FENCED_PG_URL");
        let host = match config.get_hosts().first() {
            Some(Host::Tcp(host)) => host.clone(),
            None => "localhost".to_owned(),
            #[allow(unreachable_patterns)]
            Some(_) => panic!("the round-trip tests reach PostgreSQL over TCP"),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let upstream = tokio::net::lookup_host((host.as_str(), port))
            .await
            .expect("resolve the PostgreSQL host")
            .next()
            .expect("the PostgreSQL host has an address");
        Wire {
            schema,
            config,
            upstream,
        }
    }

    /// A new proxy to the server that holds each reply for [`REPLY_DELAY`].
    pub async fn proxy(&self) -> Proxy {
        let proxy = Proxy::start(self.upstream).await.expect("start the proxy");
        proxy.set_reply_delay(REPLY_DELAY);
        proxy
    }

    /// The server's configuration, reached through `proxy`, without TLS.
    pub fn through(&self, proxy: &Proxy) -> tokio_postgres::Config {
        let mut config = tokio_postgres::Config::new();
        config
            .host("127.0.0.1")
            .port(proxy.addr().port())
            .ssl_mode(SslMode::Disable);
        if let Some(user) = self.config.get_user() {
            config.user(user);
        }
        if let Some(dbname) = self.config.get_dbname() {
            config.dbname(dbname);
        }
        if let Some(password) = self.config.get_password() {
            config.password(password);
        }
        config
    }

    /// A caller's client through `proxy`.
    async fn client(&self, proxy: &Proxy) -> Client {
        let (client, connection) = self
            .through(proxy)
            .connect(NoTls)
            .await
            .expect("connect through the proxy");
        tokio::spawn(connection);
        client
    }

    /// The guard's pool of one connection through `proxy`.
    fn pool(&self, proxy: &Proxy) -> Postgres {
        Postgres::from_config(self.through(proxy), NoTls, 1)
    }

    /// A store on the guard's own pool, not through any proxy, with the tables made.
    pub async fn store(&self) -> Store<Postgres> {
        let store = Store::new(self.schema.connect().await, reports(&self.schema));
        store.create_schema().await.expect("create the schema");
        create_lines_table(&self.schema, &store).await;
        store
    }
}

pub fn reports(place: &impl Place) -> FencedTable {
    FencedTable::builder()
        .table(place.qualified("Report"))
        .column("Payload", fenced_guard::ColumnType::Text)
        .build()
        .expect("valid test table")
}

/// A provisioned row and a lease on it, taken by `store`.
async fn leased(store: &Store<Postgres>) -> Lease {
    let key = Key::from(Uuid::new_v4());
    store.provision(key.clone()).await.unwrap();
    store.try_acquire(key, TTL).await.unwrap().unwrap()
}

/// The round trips `run` waits for, through `proxy`, counted from when it starts.
async fn counted<T>(proxy: &Proxy, run: impl Future<Output = T>) -> (T, u64) {
    proxy.reset_round_trips();
    let out = run.await;
    (out, proxy.round_trips())
}

/// The lease cycle (acquire, publish, release) on `store`: three statements.
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
async fn the_protocol_on_a_callers_client_waits_once_per_statement() {
    let wire = Wire::setup("fenced_rtt_client_").await;
    let own = wire.store().await;
    let proxy = wire.proxy().await;
    let mut client = wire.client(&proxy).await;
    let key = Key::from(Uuid::new_v4());
    own.provision(key.clone()).await.unwrap();

    // One executor kept for three cycles: each statement runs unnamed, then unnamed
    // and prepared beside it, then prepared; one round trip each time.
    let on = own.on(&client).unwrap();
    for round in 0..3 {
        let ((), waits) = counted(&proxy, cycle(&on, &key)).await;
        assert_eq!(
            waits, 3,
            "acquire, publish and release on the caller's client, round {round}"
        );
    }
    assert_eq!(
        prepared(&client).await,
        3,
        "the executor keeps its statements"
    );
    drop(on);
    assert_eq!(prepared(&client).await, 0, "a dropped executor closes them");

    // In the caller's transaction: the fence, two lines and a publication.
    let lease = own.try_acquire(key.clone(), TTL).await.unwrap().unwrap();
    let mut tx = client.transaction().await.unwrap();
    let insert = insert_line(&wire.schema, &own);
    let ((), waits) = counted(&proxy, async {
        let fenced = own.on(&mut tx).unwrap().fence(&lease).await.unwrap();
        let fenced = fenced.expect("the lease holds");
        for line in ["a", "b"] {
            let params = [Value::from(lease.key()), Value::from(line)];
            assert_eq!(fenced.execute(&insert, &params).await.unwrap(), 1);
        }
        let published = fenced.store().publish(&lease, &payload("p")).await.unwrap();
        assert!(published.is_applied());
    })
    .await;
    tx.commit().await.unwrap();
    assert_eq!(
        waits, 4,
        "fence, two lines and a publication in the caller's transaction"
    );

    // Negative control: each statement prepared, run, and closed, as before; the close
    // goes out with the next statement's preparation, unwaited for.
    let key = Key::from(Uuid::new_v4());
    own.provision(key.clone()).await.unwrap();
    let control = Store::new(PrepareEach(&client), reports(&wire.schema));
    let ((), waits) = counted(&proxy, cycle(&control, &key)).await;
    println!("prepare-then-execute, three statements: {waits} round trips");
    assert!(
        waits >= 6,
        "prepare-then-execute waited {waits} times for three statements"
    );
    drop(client);
    wire.schema.teardown().await;
}

/// How many statements are prepared on `client`'s connection, asked in the simple
/// protocol, which prepares none.
async fn prepared(client: &Client) -> usize {
    let rows = client
        .simple_query("SELECT count(*) FROM pg_prepared_statements")
        .await
        .unwrap();
    rows.iter()
        .find_map(|message| match message {
            tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0)?.parse().ok(),
            _ => None,
        })
        .expect("a count")
}

/// The values of every kind the guard binds, through the caller's client, read back as
/// they were written, by an unnamed statement and by a prepared one: the server infers
/// each parameter's type from the statement, and reads the value's text as that type,
/// or, to a prepared statement's parameter of the value's own type, its binary form.
#[tokio::test]
async fn every_kind_of_value_round_trips_through_a_callers_client() {
    let wire = Wire::setup("fenced_rtt_values_").await;
    let (client, connection) = tokio_postgres::connect(&url(), NoTls).await.unwrap();
    tokio::spawn(connection);
    let store = Store::new(
        Postgres::connect_with(&url(), 1).await.unwrap(),
        reports(&wire.schema),
    );
    let caller = store.on(&client).unwrap();
    let cases: Vec<(&str, Value)> = vec![
        ("boolean", Value::Bool(true)),
        ("boolean", Value::Bool(false)),
        ("bigint", Value::I64(i64::MIN)),
        ("bigint", Value::I64(i64::MAX)),
        ("int", Value::I64(-2_147_483_648)),
        ("smallint", Value::I64(32_767)),
        ("double precision", Value::F64(0.1)),
        ("double precision", Value::F64(-0.0)),
        ("double precision", Value::F64(f64::MAX)),
        ("double precision", Value::F64(f64::MIN_POSITIVE / 4.0)),
        ("double precision", Value::F64(f64::INFINITY)),
        ("double precision", Value::F64(f64::NEG_INFINITY)),
        (
            "text",
            Value::from("it's \"quoted\", ünïcødé, \\ and\nnewline"),
        ),
        ("text", Value::from("")),
        ("bytea", Value::Bytes((0..=255).collect())),
        ("bytea", Value::Bytes(Vec::new())),
        ("uuid", Value::Uuid(Uuid::new_v4())),
        ("text", Value::Uuid(Uuid::from_u128(0xA1))),
    ];
    // Each statement three times: unnamed, unnamed and prepared beside it, prepared.
    for round in 0..3 {
        for (ty, value) in &cases {
            // Read back through the caller's client itself, and compared on the server
            // as the type: a value that arrived as something else fails one or the
            // other.
            let sql = format!("SELECT $1::{ty}, $1::{ty} IS NOT DISTINCT FROM $2::{ty}");
            let row = caller
                .backend()
                .query_row(&sql, &[value.clone(), value.clone()])
                .await
                .unwrap_or_else(|e| panic!("{ty} {value:?}, round {round}: {e}"))
                .unwrap();
            let expected = match (value, *ty) {
                (Value::Uuid(u), "text") => Value::from(u.hyphenated().to_string()),
                _ => value.clone(),
            };
            assert_eq!(row[0], expected, "{ty}, round {round}");
            assert_eq!(row[1], Value::Bool(true), "{ty} {value:?}, round {round}");
        }
    }
    assert!(prepared(&client).await > 0, "no statement was prepared");
    // NaN is not equal to itself as a Rust value: compared on the server only, as
    // text and then binary.
    for round in 0..3 {
        let nan = caller
            .backend()
            .query_row("SELECT $1::float8 = 'NaN'::float8", &[Value::F64(f64::NAN)])
            .await
            .unwrap();
        assert_eq!(nan, Some(vec![Value::Bool(true)]), "round {round}");
    }
    let null = caller
        .backend()
        .query_row("SELECT $1::bigint IS NULL", &[Value::Null])
        .await
        .unwrap();
    assert_eq!(null, Some(vec![Value::Bool(true)]));

    // A value its parameter's type cannot read is the server's error, before the
    // statement ran; so is a count of values the statement does not take.
    for (sql, params) in [
        ("SELECT $1::bigint", vec![Value::from("twelve")]),
        ("SELECT $1::int", vec![Value::I64(i64::MAX)]),
        ("SELECT $1::bigint, $2::bigint", vec![Value::I64(1)]),
    ] {
        let error = caller.backend().query_row(sql, &params).await.unwrap_err();
        assert!(
            matches!(error, fenced_guard::Error::NotExecuted(_)),
            "{sql} {params:?}: {error:?}"
        );
    }
    // The same from a prepared statement: a value whose type is not its parameter's
    // goes as text, which the server reads or refuses, never as another type's bytes.
    let narrow = "SELECT $1::int + 0, $2::uuid";
    let id = Uuid::new_v4();
    for _ in 0..2 {
        let row = caller
            .backend()
            .query_row(narrow, &[Value::I64(7), Value::Uuid(id)])
            .await
            .unwrap();
        assert_eq!(row, Some(vec![Value::I64(7), Value::Uuid(id)]));
    }
    for params in [
        vec![Value::I64(i64::MAX), Value::Uuid(id)],
        vec![Value::I64(7), Value::from("not a uuid")],
        vec![Value::I64(7), Value::I64(1)],
    ] {
        let error = caller
            .backend()
            .query_row(narrow, &params)
            .await
            .unwrap_err();
        assert!(
            matches!(error, fenced_guard::Error::NotExecuted(_)),
            "prepared, {params:?}: {error:?}"
        );
    }
    let row = caller
        .backend()
        .query_row(narrow, &[Value::from("8"), Value::from(id.to_string())])
        .await
        .unwrap();
    assert_eq!(row, Some(vec![Value::I64(8), Value::Uuid(id)]), "as text");
    drop(caller);
    wire.schema.teardown().await;
}

/// The statements of a transaction of the test's: lines, then a publication under the
/// lease.
struct Body {
    insert: String,
    publish: String,
}

impl Body {
    fn new(wire: &Wire, store: &Store<Postgres>) -> Body {
        let payload = Identifier::new("Payload").unwrap();
        Body {
            insert: insert_line(&wire.schema, store),
            publish: dialect::publish(Dialect::Postgres, store.table(), &[&payload], false),
        }
    }

    fn publish_params(lease: &Lease) -> [Value; 4] {
        [
            Value::from("published"),
            Value::from(lease.key()),
            Value::I64(lease.generation()),
            Value::Uuid(lease.owner()),
        ]
    }

    fn line(lease: &Lease, i: usize) -> [Value; 2] {
        [Value::from(lease.key()), Value::from(format!("line {i}"))]
    }
}

/// A plain tokio-postgres transaction on `client`: `BEGIN`, the lines, the
/// publication, `COMMIT`, each statement prepared beforehand; the round trips it waited
/// for.
async fn plain(client: &mut Client, body: &Body, lease: &Lease, proxy: &Proxy) -> u64 {
    let insert = client.prepare(&body.insert).await.unwrap();
    let publish = client.prepare(&body.publish).await.unwrap();
    let ((), waits) = counted(proxy, async {
        let tx = client.transaction().await.unwrap();
        for i in 0..LINES {
            let line = Body::line(lease, i);
            assert_eq!(tx.execute_raw(&insert, &line).await.unwrap(), 1);
        }
        let params = Body::publish_params(lease);
        assert_eq!(tx.execute_raw(&publish, &params).await.unwrap(), 1);
        tx.commit().await.unwrap();
    })
    .await;
    waits
}

/// The same transaction fenced, on the guard's pool (`Store::transaction`).
async fn fenced(store: &Store<Postgres>, body: &Body, lease: &Lease) -> Result<()> {
    let tx = store
        .transaction(lease, TIMEOUT)
        .await?
        .expect("the lease holds");
    for i in 0..LINES {
        assert_eq!(tx.execute(&body.insert, &Body::line(lease, i)).await?, 1);
    }
    let published = tx
        .store()
        .publish(lease, &[("Payload", Value::from("published"))])
        .await?;
    assert!(published.is_applied());
    tx.commit().await
}

/// The same transaction deferred (`Store::deferred_transaction`): its publication is
/// its lock.
async fn deferred(store: &Store<Postgres>, body: &Body, lease: &Lease) -> Result<()> {
    let tx = store
        .deferred_transaction(lease, TIMEOUT)
        .await?
        .expect("the lease is not revoked");
    for i in 0..LINES {
        assert_eq!(tx.execute(&body.insert, &Body::line(lease, i)).await?, 1);
    }
    let published = tx.publish(&[("Payload", Value::from("published"))]).await?;
    assert!(published.is_applied());
    assert!(tx.commit().await?.is_applied());
    Ok(())
}

/// A deferred transaction sends no statement of its own: its `BEGIN` and the server's
/// timeouts go with its first line, its publication is its lock, and it waits one round
/// trip fewer than the plain transaction, whose `BEGIN` is waited for alone. Without a
/// fenced write, its commit's check costs the round trip back.
#[tokio::test]
async fn a_deferred_transaction_waits_less_than_a_plain_one() {
    let wire = Wire::setup("fenced_rtt_deferred_").await;
    let own = wire.store().await;
    let body = Body::new(&wire, &own);

    let proxy = wire.proxy().await;
    let mut client = wire.client(&proxy).await;
    let plain_waits = plain(&mut client, &body, &leased(&own).await, &proxy).await;

    let proxy = wire.proxy().await;
    let store = Store::new(wire.pool(&proxy), reports(&wire.schema));
    deferred(&store, &body, &leased(&own).await).await.unwrap();
    let lease = leased(&own).await;
    proxy.reset_round_trips();
    let (done, deferred_waits) = counted(&proxy, deferred(&store, &body, &lease)).await;
    done.unwrap();
    println!("plain transaction: {plain_waits} round trips; deferred: {deferred_waits}");
    assert_eq!(
        deferred_waits,
        plain_waits - 1,
        "the lines, the publication and COMMIT, BEGIN sent with the first line"
    );
    assert_eq!(
        proxy.statements(),
        (LINES + 3) as u64,
        "BEGIN and the timeouts, the lines, the publication, COMMIT"
    );

    // Run once first, so that the check is prepared on the connection.
    let checked_at_commit = async |lease: Lease| {
        let tx = store.deferred_transaction(&lease, TIMEOUT).await?.unwrap();
        for i in 0..LINES {
            assert_eq!(tx.execute(&body.insert, &Body::line(&lease, i)).await?, 1);
        }
        assert!(tx.commit().await?.is_applied());
        Ok::<_, fenced_guard::Error>(())
    };
    checked_at_commit(leased(&own).await).await.unwrap();
    let lease = leased(&own).await;
    let (done, unwritten_waits) = counted(&proxy, checked_at_commit(lease)).await;
    done.unwrap();
    assert_eq!(
        unwritten_waits, deferred_waits,
        "the check at commit in place of the publication"
    );
    drop(client);
    wire.schema.teardown().await;
}

#[tokio::test]
async fn a_fenced_transaction_waits_no_more_than_a_plain_one() {
    let wire = Wire::setup("fenced_rtt_tx_").await;
    let own = wire.store().await;
    let body = Body::new(&wire, &own);

    let proxy = wire.proxy().await;
    let mut client = wire.client(&proxy).await;
    let plain_waits = plain(&mut client, &body, &leased(&own).await, &proxy).await;
    assert_eq!(
        plain_waits,
        (LINES + 3) as u64,
        "BEGIN, the lines, the publication and COMMIT"
    );

    let proxy = wire.proxy().await;
    let store = Store::new(wire.pool(&proxy), reports(&wire.schema));
    // The first prepares each statement on the pool's connection, which keeps them.
    fenced(&store, &body, &leased(&own).await).await.unwrap();
    let lease = leased(&own).await;
    let (done, fenced_waits) = counted(&proxy, fenced(&store, &body, &lease)).await;
    done.unwrap();
    // BEGIN with the server's timeouts, set once in the same batch for a transaction
    // far shorter than a tenth of its own; the check, the lines, the publication,
    // COMMIT.
    assert_eq!(
        proxy.statements(),
        (LINES + 3 + 1) as u64,
        "the server's timeouts were set more than once"
    );
    // Negative control: statements a tenth of the timeout apart set them each time.
    let lease = leased(&own).await;
    proxy.reset_round_trips();
    let timeout = Duration::from_millis(1_500);
    let tx = store.transaction(&lease, timeout).await.unwrap().unwrap();
    for i in 0..LINES {
        tokio::time::sleep(timeout / 9).await;
        assert_eq!(
            tx.execute(&body.insert, &Body::line(&lease, i))
                .await
                .unwrap(),
            1
        );
    }
    tokio::time::sleep(timeout / 9).await;
    assert!(
        tx.store()
            .update(&lease, &payload("p"))
            .await
            .unwrap()
            .is_applied()
    );
    tx.commit().await.unwrap();
    assert_eq!(
        proxy.statements(),
        (LINES + 3 + 1 + LINES + 1) as u64,
        "the server's timeouts set again after each tenth of the timeout were not counted"
    );
    println!("plain transaction: {plain_waits} round trips; fenced: {fenced_waits}");
    assert!(
        fenced_waits <= plain_waits,
        "the fenced transaction waited {fenced_waits} times, a plain one {plain_waits}"
    );

    // Negative control: `BEGIN` waited for on its own, then the check-and-lock, as
    // before they were pipelined: one round trip more than the plain transaction. Run
    // once first, so that its statements (the lines as written, without the check the
    // fenced transaction adds to each) are prepared on the connection.
    let unpipelined = async |lease: Lease| {
        let lent = store.backend().lend().await?;
        lent.execute_batch("BEGIN").await?;
        let lock = dialect::lock(Dialect::Postgres, store.table());
        assert!(lent.query_row(&lock, &lock_params(&lease)).await?.is_some());
        for i in 0..LINES {
            assert_eq!(lent.execute(&body.insert, &Body::line(&lease, i)).await?, 1);
        }
        assert_eq!(
            lent.execute(&body.publish, &Body::publish_params(&lease))
                .await?,
            1
        );
        lent.execute_batch("COMMIT").await?;
        Postgres::give_back(lent);
        Ok::<_, fenced_guard::Error>(())
    };
    unpipelined(leased(&own).await).await.unwrap();
    let lease = leased(&own).await;
    let (done, unpipelined) = counted(&proxy, unpipelined(lease)).await;
    done.unwrap();
    println!("fenced, BEGIN waited for on its own: {unpipelined} round trips");
    assert_eq!(
        unpipelined,
        plain_waits + 1,
        "a BEGIN waited for on its own was not counted"
    );
    drop(client);
    wire.schema.teardown().await;
}

/// An executor that prepares each statement, then runs it, and drops (closes) it: how
/// the caller's client ran statements before, for the negative control.
struct PrepareEach<'a>(&'a Client);

impl Executor for PrepareEach<'_> {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    async fn execute(&self, sql: &str, params: &[Value]) -> Result<u64> {
        let statement = self
            .0
            .prepare(sql)
            .await
            .map_err(fenced_guard::Error::from)?;
        Ok(self.0.execute_raw(&statement, params).await?)
    }

    async fn query_row(&self, sql: &str, params: &[Value]) -> Result<Option<Vec<Value>>> {
        let statement = self.0.prepare(sql).await?;
        let rows = self
            .0
            .query(
                &statement,
                &params.iter().map(|v| v as _).collect::<Vec<_>>(),
            )
            .await?;
        Ok(rows.first().map(|row| {
            (0..row.len())
                .map(|i| match row.columns()[i].type_().name() {
                    "int8" => Value::I64(row.get(i)),
                    other => panic!("the control decodes no {other}"),
                })
                .collect()
        }))
    }

    async fn execute_batch(&self, sql: &str) -> Result<()> {
        Ok(self.0.batch_execute(sql).await?)
    }
}

/// A claim of one row waits for one round trip; a store's first claim reads the table's
/// size in one more, and no later claim reads it again. Negative control: with every
/// row past the table's first block held, a claim that starts past it looks again
/// before its start, in a round trip of its own.
#[tokio::test]
async fn a_claim_of_one_row_waits_once() {
    use fenced_guard::Candidates;

    const ROWS: i64 = 1_000;
    const CLAIMS: u64 = 10;
    let wire = Wire::setup("fenced_rtt_claim_").await;
    let own = wire.store().await;
    let d = own.dialect();
    let table = own.table().name().quoted(d);
    let key = own.table().key_column().quoted(d);
    let expiry = own.table().expiry_column().quoted(d);
    own.backend()
        .execute(
            &format!(
                "INSERT INTO {table} ({key}) SELECT gen_random_uuid() FROM generate_series(1, $1)"
            ),
            &[Value::I64(ROWS)],
        )
        .await
        .unwrap();
    let claims = async |store: &Store<Postgres>| {
        for _ in 0..CLAIMS {
            let got = store.claim(&Candidates::any(), 1, TTL).await.unwrap();
            assert_eq!(got.len(), 1);
        }
    };

    let proxy = wire.proxy().await;
    let pool = wire.pool(&proxy);
    // Connected, and the claim's statements prepared on the connection.
    let warm = Store::new(pool.clone(), reports(&wire.schema));
    assert_eq!(
        warm.claim(&Candidates::any(), 1, TTL).await.unwrap().len(),
        1
    );
    let store = Store::new(pool, reports(&wire.schema));
    let (got, first) = counted(&proxy, store.claim(&Candidates::any(), 1, TTL)).await;
    assert_eq!(got.unwrap().len(), 1);
    assert_eq!(first, 2, "the table's size, then the claim");
    let ((), waits) = counted(&proxy, claims(&store)).await;
    assert_eq!(waits, CLAIMS, "one round trip a claim");

    own.backend()
        .execute(
            &format!(
                "UPDATE {table} SET {expiry} = clock_timestamp() + interval '1 hour', \
                 {} = {} WHERE ctid >= '(1,0)'",
                own.table().epoch_column().quoted(d),
                dialect::epoch_subquery(d, own.table())
            ),
            &[],
        )
        .await
        .unwrap();
    let ((), control) = counted(&proxy, claims(&store)).await;
    println!(
        "claims of one row: {waits} round trips for {CLAIMS}; past the first block held: {control}"
    );
    assert!(
        control > CLAIMS,
        "no claim looked again before its start: the test could not tell"
    );
    wire.schema.teardown().await;
}
