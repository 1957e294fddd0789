//! PostgreSQL's own quoting and placeholder forms: the other databases read them differently.

use fenced::{Lease, Outcome, Sqlite, Store, fenced_write};

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET Payload = E'it\\'s' WHERE Note = @payload",
)]
async fn escape_string(store: &Store<Sqlite>, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET Payload = $$x$$ WHERE Note = @payload",
)]
async fn dollar_quote(store: &Store<Sqlite>, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET U&\"Payload\" = @payload",
)]
async fn unicode_identifier(store: &Store<Sqlite>, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET Payload = @payload WHERE N::bigint = 1",
)]
async fn cast_operator(store: &Store<Sqlite>, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET Payload = $1",
)]
async fn positional(store: &Store<Sqlite>, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

fn main() {}
