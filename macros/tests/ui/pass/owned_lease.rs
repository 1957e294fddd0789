use fenced::{Dialect, FencedTable, Lease, Outcome, Sqlite, Store, fenced_write};

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET Payload = @payload",
    publish_once,
)]
async fn publish(store: &Store<Sqlite>, lease: Lease, payload: String) -> fenced::Result<Outcome>;

fn main() {
    let _ = publish;
    assert!(publish_sql(&FencedTable::default(), Dialect::Postgres).unwrap().contains("\"PublishedGeneration\" < $3"));
}
