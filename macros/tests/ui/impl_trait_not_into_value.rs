// An `impl Trait` argument that does not convert into a `Value`: the error names the
// public `Into<Value>`, not the macro's private binding trait.
use fenced::{Lease, Outcome, Sqlite, Store, fenced_write};

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET Payload = @payload",
)]
pub async fn save(store: &Store<Sqlite>, lease: &Lease, payload: impl AsRef<str> + Send) -> fenced::Result<Outcome>;

fn main() {}
