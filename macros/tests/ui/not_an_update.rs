use fenced::{Lease, Outcome, Sqlite, Store, fenced_write};

pub struct Reports {
    store: Store<Sqlite>,
}

impl Reports {
    #[fenced_write(
        table = "ReportPublication",
        sql = "SELECT Payload FROM ReportPublication WHERE ReportId = @report",
        store = self.store,
    )]
    pub async fn save(&self, lease: &Lease, report: uuid::Uuid) -> fenced::Result<Outcome>;
}

fn main() {}
