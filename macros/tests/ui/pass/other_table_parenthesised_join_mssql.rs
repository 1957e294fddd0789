use fenced::{Dialect, Executor, Fenced, FencedTable, fenced_write};

pub struct Lines;

impl Lines {
    /// SQL Server's alias rule inside a parenthesised join, in SQL written for SQL
    /// Server alone: it writes `ReportLine`, which every check then sees.
    #[fenced_write(
        table = "ReportPublication",
        dialect = "mssql",
        sql = "UPDATE l SET Text = @text FROM (ReportLine AS l JOIN Queue AS q ON q.Id = l.QueueId)",
    )]
    pub async fn retext<E: Executor>(&self, fenced: &Fenced<'_, E>, text: &str) -> fenced::Result<u64>;
}

fn main() {
    assert_eq!(
        Lines::retext_sql(&FencedTable::default(), Dialect::Mssql).unwrap(),
        "UPDATE l SET Text = @P1 FROM (ReportLine AS l JOIN Queue AS q ON q.Id = l.QueueId)"
    );
}
