use fenced::{Executor, Fenced, fenced_write};

pub struct Lines;

impl Lines {
    // An upsert of another table, for every database: SQL Server has no `ON CONFLICT`.
    #[fenced_write(
        table = "ReportPublication",
        sql = "INSERT INTO ReportLine (ReportId, Text) VALUES (@report, @text) ON CONFLICT (ReportId) DO UPDATE SET Text = @text",
    )]
    pub async fn put<E: Executor>(&self, fenced: &Fenced<'_, E>, report: uuid::Uuid, text: &str) -> fenced::Result<u64>;

    // The same written for SQL Server alone.
    #[fenced_write(
        table = "ReportPublication",
        dialect = "mssql",
        sql = "INSERT INTO ReportLine (ReportId, Text) VALUES (@report, @text) ON CONFLICT (ReportId) DO NOTHING",
    )]
    pub async fn put_mssql<E: Executor>(&self, fenced: &Fenced<'_, E>, report: uuid::Uuid, text: &str) -> fenced::Result<u64>;

    // MySQL's form, whatever the method declares.
    #[fenced_write(
        table = "ReportPublication",
        dialect = "postgres",
        sql = "INSERT INTO ReportLine (ReportId, Text) VALUES (@report, @text) ON DUPLICATE KEY UPDATE Text = @text",
    )]
    pub async fn put_mysql<E: Executor>(&self, fenced: &Fenced<'_, E>, report: uuid::Uuid, text: &str) -> fenced::Result<u64>;
}

fn main() {}
