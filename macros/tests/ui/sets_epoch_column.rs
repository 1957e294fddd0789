//! The recovery epoch is a protocol column, as `Store::update` refuses it.

use fenced::{Lease, Outcome, Sqlite, Store, fenced_write};

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET Payload = @payload, LeaseEpoch = 0",
)]
async fn reset_epoch(store: &Store<Sqlite>, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

fn main() {}
