//! SQL Server's own quoting, variables and client directives.

use fenced::{Lease, Outcome, Sqlite, Store, fenced_write};

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET [Payload] = @payload",
)]
async fn brackets(store: &Store<Sqlite>, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET Payload = @payload WHERE Note = N'x'",
)]
async fn national_string(store: &Store<Sqlite>, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET Payload = @payload WHERE @@ROWCOUNT = 0",
)]
async fn system_variable(store: &Store<Sqlite>, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET Payload = @payload\nGO",
)]
async fn batch_separator(store: &Store<Sqlite>, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

fn main() {}
