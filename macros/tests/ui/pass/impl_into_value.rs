// An argument of type `impl Into<Value>` binds through `Into`, the bound it names.
use fenced::{Lease, Outcome, Sqlite, Store, Value, fenced_write};

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET Payload = @payload",
)]
pub async fn save(store: &Store<Sqlite>, lease: &Lease, payload: impl Into<Value> + Send) -> fenced::Result<Outcome>;

fn main() {}
