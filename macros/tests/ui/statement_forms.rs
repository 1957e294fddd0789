//! Statements whose appended fence would not be a conjunct of the top-level WHERE.

use fenced::{Lease, Outcome, Sqlite, Store, fenced_write};

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET Payload = @payload; DELETE FROM Other",
)]
async fn two_statements(store: &Store<Sqlite>, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE OR REPLACE ReportPublication SET Payload = @payload",
)]
async fn update_or_replace(store: &Store<Sqlite>, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET Payload = @payload WHERE CURRENT OF reports",
)]
async fn current_of(store: &Store<Sqlite>, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET Payload = @payload WHERE Draft = 1 OPTION (MAXDOP 1)",
)]
async fn query_option(store: &Store<Sqlite>, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET Payload = @payload WHERE Draft = 1 ORDER BY Draft LIMIT 1",
)]
async fn order_limit(store: &Store<Sqlite>, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

fn main() {}
