use fenced::{Lease, Outcome, Sqlite, Store, fenced_write};

pub struct Reports {
    store: Store<Sqlite>,
}

impl Reports {
    #[fenced_write(
        table = "ReportPublication",
        sql = "INSERT INTO ReportLine (ReportId, Text) VALUES (@report, @text)",
        store = self.store,
    )]
    pub async fn add_line(&self, lease: &Lease, report: uuid::Uuid, text: &str) -> fenced::Result<Outcome>;
}

fn main() {}
