//! An application that depends on the guard directly, without the `fenced` facade.

use fenced_guard::{Dialect, FencedTable, Lease, Outcome, Sqlite, Store};
use fenced_macros::fenced_write;

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET Payload = @payload",
    crate = "fenced_guard",
)]
async fn save(store: &Store<Sqlite>, lease: &Lease, payload: &str) -> fenced_guard::Result<Outcome>;

fn main() {
    let _ = save;
    assert!(save_sql(&FencedTable::default(), Dialect::Sqlite).unwrap().contains("\"LeaseOwner\" = ?4"));
}
