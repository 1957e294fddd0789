//! SQLite's own quoting and placeholder forms.

use fenced::{Lease, Outcome, Sqlite, Store, fenced_write};

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET `Payload` = @payload",
)]
async fn backticks(store: &Store<Sqlite>, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET Payload = ?1",
)]
async fn question_mark(store: &Store<Sqlite>, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET Payload = :payload",
)]
async fn colon_name(store: &Store<Sqlite>, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET Payload = @payload WHERE Data = X'00'",
)]
async fn blob_literal(store: &Store<Sqlite>, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

fn main() {}
