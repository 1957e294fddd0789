//! A lease error is the only error: the parameters are not also called unused.

use fenced::{Outcome, Sqlite, Store, fenced_write};

pub struct Token;

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET Payload = @payload",
)]
async fn save(store: &Store<Sqlite>, token: &Token, payload: &str) -> fenced::Result<Outcome>;

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET Payload = @payload",
    lease = lese,
)]
async fn save_named(store: &Store<Sqlite>, lease: &Token, payload: &str) -> fenced::Result<Outcome>;

fn main() {}
