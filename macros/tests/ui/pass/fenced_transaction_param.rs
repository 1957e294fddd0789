// The guard's own fenced transaction taken as it is, `&FencedTransaction`, unmarked: it
// derefs to the `Fenced` it holds.
use fenced::{FencedTransaction, Outcome, Sqlite, fenced_write};

pub struct Lines;

impl Lines {
    #[fenced_write(
        table = "ReportPublication",
        sql = "INSERT INTO ReportLine (ReportId, Body) VALUES (@report, @body)",
    )]
    pub async fn add(&self, tx: &FencedTransaction<'_, Sqlite>, report: uuid::Uuid, body: &str) -> fenced::Result<u64>;

    #[fenced_write(
        table = "ReportPublication",
        sql = "UPDATE ReportPublication SET Payload = @payload",
    )]
    pub async fn save(&self, tx: &FencedTransaction<'_, Sqlite>, payload: &str) -> fenced::Result<Outcome>;
}

fn main() {}
