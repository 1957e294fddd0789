//! Parameters that bind as they are written: references, `Option<&T>`, a raw
//! identifier as `@type`, and a store reached through a parameter.

use fenced::{Dialect, FencedTable, Lease, Outcome, Sqlite, Store, fenced_write};
use uuid::Uuid;

pub struct Repo {
    store: Store<Sqlite>,
}

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET Payload = @payload, Owner = @owner, N = @n, \
           Note = @note, Kind = @type",
    store = repo.store,
)]
async fn save(
    repo: &Repo,
    lease: &Lease,
    payload: &String,
    owner: &Uuid,
    n: &i64,
    note: Option<&str>,
    r#type: Option<&String>,
) -> fenced::Result<Outcome>;

fn main() {
    let _ = save;
    // The companion shows the store's own epoch table.
    let table = FencedTable::builder().epoch_table("LeaseEpochs").build().unwrap();
    let sql = save_sql(&table, Dialect::Postgres).unwrap();
    assert!(sql.contains("FROM \"LeaseEpochs\""), "{sql}");
    assert!(sql.contains("Kind = $5"), "{sql}");
}
