// A fenced transaction taken by value: the method only sends a statement in it.
use fenced::{Executor, Fenced, fenced_write};

pub struct Lines;

impl Lines {
    #[fenced_write(
        table = "ReportPublication",
        sql = "INSERT INTO ReportLine (ReportId, Body) VALUES (@report, @body)",
    )]
    pub async fn add<E: Executor>(&self, fenced: Fenced<'_, E>, report: uuid::Uuid, body: &str) -> fenced::Result<u64>;
}

fn main() {}
