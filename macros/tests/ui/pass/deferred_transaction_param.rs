// The guard's deferred transaction taken as it is, `&DeferredTransaction`, unmarked: it
// derefs to the `Fenced` it holds.
use fenced::{DeferredTransaction, Outcome, Sqlite, fenced_write};

pub struct Lines;

impl Lines {
    #[fenced_write(
        table = "ReportPublication",
        sql = "INSERT INTO ReportLine (ReportId, Body) VALUES (@report, @body)",
    )]
    pub async fn add(&self, tx: &DeferredTransaction<'_, Sqlite>, report: uuid::Uuid, body: &str) -> fenced::Result<u64>;

    #[fenced_write(
        table = "ReportPublication",
        sql = "UPDATE ReportPublication SET Payload = @payload",
    )]
    pub async fn save(&self, tx: &DeferredTransaction<'_, Sqlite>, payload: &str) -> fenced::Result<Outcome>;
}

fn main() {}
