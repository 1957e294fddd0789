// Statements on the other-table path that write the lease's table under a spelling a
// reading of another database would miss: each is refused at compile time, by each
// database's own reading of which table it writes.
use fenced::{Executor, Fenced, fenced_write};

pub struct Sneaky;

impl Sneaky {
    // An alias spelled like the lease table: SQL Server's alias rule would make `line`
    // the target; PostgreSQL and SQLite update "Report".
    #[fenced_write(
        table = "Report",
        sql = r#"UPDATE "Report" SET "Payload" = @payload FROM line AS Report WHERE "ReportId" = @id"#,
    )]
    pub async fn alias<E: Executor>(&self, fenced: &Fenced<'_, E>, payload: &str, id: uuid::Uuid) -> fenced::Result<u64>;

    // The same through PostgreSQL's `DELETE ... USING`.
    #[fenced_write(
        table = "Report",
        dialect = "postgres",
        sql = r#"DELETE FROM "Report" USING line AS Report WHERE "ReportId" = @id"#,
    )]
    pub async fn using<E: Executor>(&self, fenced: &Fenced<'_, E>, id: uuid::Uuid) -> fenced::Result<u64>;

    // A Unicode-escaped name, which PostgreSQL alone reads as `Report`.
    #[fenced_write(
        table = "Report",
        dialect = "postgres",
        sql = r#"INSERT INTO U&"Report" ("ReportId") VALUES (@id)"#,
    )]
    pub async fn escaped<E: Executor>(&self, fenced: &Fenced<'_, E>, id: uuid::Uuid) -> fenced::Result<u64>;

    // SQL Server's update of a derived table over the lease's table.
    #[fenced_write(
        table = "Report",
        dialect = "mssql",
        sql = "UPDATE r SET Payload = @payload FROM (SELECT * FROM Report) AS r",
    )]
    pub async fn derived<E: Executor>(&self, fenced: &Fenced<'_, E>, payload: &str) -> fenced::Result<u64>;
}

fn main() {}
