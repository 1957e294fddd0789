// SQL Server's alias rule reaches inside a parenthesised join: `UPDATE g ... FROM
// (FencedEpoch AS g JOIN ...)` writes the epoch table there. Found by the other-table
// differential test (src/differential/other_table), which saw such texts accepted and
// the protected tables changed on SQL Server.
use fenced::{Executor, Fenced, fenced_write};

pub struct Lines;

impl Lines {
    // In SQL for every database: SQL Server writes the epoch table through `g`,
    // PostgreSQL and SQLite a table named `g`.
    #[fenced_write(
        table = "ReportPublication",
        sql = "UPDATE g SET Epoch = @epoch FROM (FencedEpoch AS g JOIN ReportLine AS l ON 1 = 1)",
    )]
    pub async fn portable<E: Executor>(&self, fenced: &Fenced<'_, E>, epoch: i64) -> fenced::Result<u64>;

    // In SQL for SQL Server alone, nested deeper: the operations table, which only the
    // guard writes.
    #[fenced_write(
        table = "ReportPublication",
        dialect = "mssql",
        sql = "DELETE g FROM ReportLine AS l JOIN (Queue AS q CROSS JOIN dbo.FencedOperation AS g) ON 1 = 1",
    )]
    pub async fn for_sql_server<E: Executor>(&self, fenced: &Fenced<'_, E>) -> fenced::Result<u64>;
}

fn main() {}
