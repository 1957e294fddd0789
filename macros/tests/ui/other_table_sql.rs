use fenced::{Executor, Fenced, fenced_write};

pub struct Lines;

impl Lines {
    #[fenced_write(
        table = "ReportPublication",
        sql = "INSERT INTO [ReportLine] (ReportId, Text) VALUES (@report, $2) RETURNING Text",
    )]
    pub async fn add<E: Executor>(&self, fenced: &Fenced<'_, E>, report: uuid::Uuid, text: &str) -> fenced::Result<u64>;
}

fn main() {}
