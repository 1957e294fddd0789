//! Raw access to a fenced row, around the protocol: the tests read the durable state
//! back and move a lease's expiry with plain statements, bound by key.

use fenced_guard::{Dialect, Executor, Identifier, Key, Store, Value};
use uuid::Uuid;

/// The test tables' own column, `Payload`, quoted for `d`.
pub fn payload_column(d: Dialect) -> String {
    Identifier::new("Payload").unwrap().quoted(d)
}

/// The caller's columns for a write of `text` into `Payload`.
pub fn payload(text: &str) -> [(&'static str, Value); 1] {
    [("Payload", Value::from(text))]
}

/// The SQL expressions `columns` (already quoted) of the row under `key`, as stored.
pub async fn select<B: Executor>(store: &Store<B>, key: &Key, columns: &[String]) -> Vec<Value> {
    let d = store.dialect();
    let t = store.table();
    let sql = format!(
        "SELECT {} FROM {} WHERE {} = {}",
        columns.join(", "),
        t.name().quoted(d),
        t.key_column().quoted(d),
        d.placeholder(1)
    );
    store
        .backend()
        .query_row(&sql, &[Value::from(key)])
        .await
        .expect("read the row back")
        .expect("the row exists")
}

/// The owner column as read back: `None` while the row is free.
pub fn owner(value: &Value) -> Option<Uuid> {
    if value.is_null() {
        None
    } else {
        Some(value.as_uuid().expect("owner is a uuid"))
    }
}

/// The database's clock moved by `hours`, as an expression of the expiry column's type.
pub fn clock_plus_hours(d: Dialect, hours: i32) -> String {
    match d {
        Dialect::Postgres => format!("clock_timestamp() + interval '{hours} hour'"),
        Dialect::Sqlite => format!("{} + {}", d.clock(), i64::from(hours) * 3_600_000),
        Dialect::Mssql => format!("DATEADD(hour, {hours}, SYSUTCDATETIME())"),
    }
}

/// Moves the row's expiry an hour into the past with a raw UPDATE.
pub async fn expire<B: Executor>(store: &Store<B>, key: &Key) {
    let d = store.dialect();
    let t = store.table();
    let sql = format!(
        "UPDATE {} SET {} = {} WHERE {} = {}",
        t.name().quoted(d),
        t.expiry_column().quoted(d),
        clock_plus_hours(d, -1),
        t.key_column().quoted(d),
        d.placeholder(1)
    );
    let rows = store
        .backend()
        .execute(&sql, &[Value::from(key)])
        .await
        .expect("expire");
    assert_eq!(rows, 1, "the test could not move the expiry");
}
