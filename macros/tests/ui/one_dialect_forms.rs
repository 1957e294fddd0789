//! A method that declares its one dialect: that database's forms only, and still
//! nothing the macro cannot bind or the database reads two ways.

use fenced::{Lease, Outcome, Sqlite, Store, fenced_write};

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET Payload = $$x$$ WHERE Note = @payload",
    dialect = "sqlite",
)]
async fn dollar_quote_on_sqlite(store: &Store<Sqlite>, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET [Payload] = @payload",
    dialect = "postgres",
)]
async fn brackets_on_postgres(store: &Store<Sqlite>, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET U&\"Payload\" = @payload",
    dialect = "postgres",
)]
async fn split_differently_on_postgres(store: &Store<Sqlite>, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET Payload = $1",
    dialect = "postgres",
)]
async fn positional_on_postgres(store: &Store<Sqlite>, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET Payload = 'a\\b' WHERE Note = @payload",
    dialect = "postgres",
)]
async fn backslash_on_postgres(store: &Store<Sqlite>, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET Payload = @payload, N = @@ROWCOUNT",
    dialect = "mssql",
)]
async fn system_variable_on_sql_server(store: &Store<Sqlite>, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET [LeaseEpoch] = 0, Payload = @payload",
    dialect = "mssql",
)]
async fn protocol_column_on_sql_server(store: &Store<Sqlite>, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

#[fenced_write(
    table = "ReportPublication",
    sql = "UPDATE ReportPublication SET Payload = @payload",
    dialect = "mysql",
)]
async fn unknown_dialect(store: &Store<Sqlite>, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

fn main() {}
