//! tiberius: a caller's `Client`, with and without a transaction open on it.

use fenced_guard::{Key, Store};
use tokio::net::TcpStream;
use tokio_util::compat::{Compat, TokioAsyncWriteCompatExt};
use uuid::Uuid;

use crate::protocol::{fenced_lines, lines, protocol, reports, stale_is_refused};
use crate::support::Place;
use crate::support::lines::create_lines_table;
use crate::support::mssql::TestSchema;

async fn client(url: &str) -> tiberius::Client<Compat<TcpStream>> {
    let config = tiberius::Config::from_ado_string(url).expect("a valid connection string");
    let tcp = TcpStream::connect(config.get_addr())
        .await
        .expect("connect");
    tcp.set_nodelay(true).unwrap();
    Box::pin(tiberius::Client::connect(config, tcp.compat_write()))
        .await
        .expect("log in")
}

async fn batch(client: &mut tiberius::Client<Compat<TcpStream>>, sql: &str) {
    client
        .simple_query(sql)
        .await
        .expect(sql)
        .into_results()
        .await
        .expect(sql);
}

#[tokio::test]
async fn the_protocol_on_a_client_and_its_transactions() {
    let Some(schema) = TestSchema::create("fenced_conn_", 1).await else {
        return;
    };
    let own = Store::new(schema.connect().await, reports(&schema));
    own.create_schema().await.unwrap();
    create_lines_table(&schema, &own).await;
    let mut client = client(schema.url()).await;
    let key = Key::from(Uuid::new_v4());

    // Babelfish rejects the untyped null tiberius sends (a documented departure).
    let nulls = !crate::support::mssql::is_babelfish(own.backend()).await;
    let lease = protocol(&own.on(&mut client).unwrap(), &key, nulls).await;

    batch(&mut client, "BEGIN TRANSACTION").await;
    assert!(fenced_lines(&schema, own.on(&mut client).unwrap(), &lease, "line 0").await);
    batch(&mut client, "COMMIT TRANSACTION").await;
    assert_eq!(lines(&schema, &own, &key).await, 1);

    batch(&mut client, "BEGIN TRANSACTION").await;
    assert!(fenced_lines(&schema, own.on(&mut client).unwrap(), &lease, "line 1").await);
    batch(&mut client, "ROLLBACK TRANSACTION").await;
    assert_eq!(lines(&schema, &own, &key).await, 1);

    stale_is_refused(&own.on(&mut client).unwrap(), &key, &lease).await;
    batch(&mut client, "BEGIN TRANSACTION").await;
    assert!(!fenced_lines(&schema, own.on(&mut client).unwrap(), &lease, "line 2").await);
    batch(&mut client, "COMMIT TRANSACTION").await;
    assert_eq!(lines(&schema, &own, &key).await, 1);
    drop(client);
    schema.teardown().await;
}
