//! A second table beside the fenced one: a report's lines, written in the report's
//! fenced transaction.

use fenced_guard::{Dialect, Executor, Identifier, Key, Lend, QualifiedName, Store, Value};

use super::Place;

/// `name` quoted for `d`.
fn q(d: Dialect, name: &str) -> String {
    Identifier::new(name).expect("valid name").quoted(d)
}

/// The lines table, quoted for the store's dialect.
pub fn lines_table<E: Executor>(place: &impl Place, store: &Store<E>) -> String {
    QualifiedName::parse(&place.qualified("ReportLine"))
        .expect("valid lines table")
        .quoted(store.dialect())
}

/// The statement that inserts one line: 1 the report's key, 2 the line.
pub fn insert_line<E: Executor>(place: &impl Place, store: &Store<E>) -> String {
    let d = store.dialect();
    format!(
        "INSERT INTO {} ({}, {}) VALUES ({}, {})",
        lines_table(place, store),
        q(d, "Report"),
        q(d, "Line"),
        d.placeholder(1),
        d.placeholder(2)
    )
}

/// How many lines `key` has.
pub async fn line_count<E: Executor>(place: &impl Place, store: &Store<E>, key: &Key) -> i64 {
    let d = store.dialect();
    let sql = format!(
        "SELECT CAST(COUNT(*) AS bigint) FROM {} WHERE {} = {}",
        lines_table(place, store),
        q(d, "Report"),
        d.placeholder(1)
    );
    store
        .backend()
        .query_i64(&sql, &[Value::from(key)])
        .await
        .expect("count the lines")
        .expect("a count")
}

/// Creates the lines table: the report's key and a line of text.
pub async fn create_lines_table<E: Executor>(place: &impl Place, store: &Store<E>) {
    let d = store.dialect();
    let (key_type, text_type) = match d {
        Dialect::Postgres => ("uuid", "text"),
        Dialect::Sqlite => ("text", "text"),
        Dialect::Mssql => ("uniqueidentifier", "nvarchar(200)"),
    };
    let create = format!(
        "CREATE TABLE {} ({} {key_type} NOT NULL, {} {text_type} NOT NULL)",
        lines_table(place, store),
        q(d, "Report"),
        q(d, "Line")
    );
    store
        .backend()
        .execute_batch(&create)
        .await
        .expect("create the lines table");
}

/// Inserts `line` for `key` in a plain transaction on a connection the store's pool
/// lends, committed: what a worker writes without the fence. The transaction tests'
/// negative control.
pub async fn insert_plainly<B: Lend>(place: &impl Place, store: &Store<B>, key: &Key, line: &str) {
    let d = store.dialect();
    let plain = store.backend().lend().await.expect("lend a connection");
    plain
        .execute_batch(fenced_guard::dialect::begin(d))
        .await
        .expect("begin");
    plain
        .execute(
            &insert_line(place, store),
            &[Value::from(key), Value::from(line)],
        )
        .await
        .expect("insert a line");
    plain
        .execute_batch(fenced_guard::dialect::commit(d))
        .await
        .expect("commit");
    B::give_back(plain);
}
