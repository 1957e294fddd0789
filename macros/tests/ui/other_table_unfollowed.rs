// Statements on the other-table path whose written table the macro cannot follow in
// every database's reading: each is refused, naming the construct.
use fenced::{Executor, Fenced, fenced_write};

pub struct Lines;

impl Lines {
    // SQL Server's alias rule in SQL for every database: PostgreSQL and SQLite would
    // write a table named `l` (with `dialect = "mssql"` it compiles: pass/other_table_alias_mssql.rs).
    #[fenced_write(
        table = "ReportPublication",
        sql = "UPDATE l SET Text = @text FROM ReportLine AS l WHERE l.ReportId = @id",
    )]
    pub async fn aliased<E: Executor>(&self, fenced: &Fenced<'_, E>, text: &str, id: uuid::Uuid) -> fenced::Result<u64>;

    // A statement inside the statement: SQL Server's composable DML.
    #[fenced_write(
        table = "ReportPublication",
        dialect = "mssql",
        sql = "INSERT INTO ReportLine (ReportId) SELECT ReportId FROM (DELETE FROM Queue OUTPUT deleted.ReportId) AS gone",
    )]
    pub async fn nested<E: Executor>(&self, fenced: &Fenced<'_, E>) -> fenced::Result<u64>;

    // A procedure's rows, and whatever the procedure writes.
    #[fenced_write(
        table = "ReportPublication",
        dialect = "mssql",
        sql = "INSERT INTO ReportLine (ReportId) EXEC dbo.Lines @id",
    )]
    pub async fn procedure<E: Executor>(&self, fenced: &Fenced<'_, E>, id: uuid::Uuid) -> fenced::Result<u64>;
}

fn main() {}
