// A store shared through a smart pointer, as a service holds one: the parameter is the
// store, not a value the SQL must use.
use std::sync::Arc;

use fenced::{Lease, Outcome, Sqlite, Store, fenced_write};

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET Payload = @payload",
)]
pub async fn save(store: Arc<Store<Sqlite>>, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET Payload = @payload",
)]
pub async fn save_by_ref(store: &Arc<Store<Sqlite>>, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

fn main() {}
