use fenced::{Lease, Outcome, Sqlite, Store, fenced_write};

pub struct Reports {
    store: Store<Sqlite>,
}

impl Reports {
    #[fenced_write(
        table = "ReportPublication",
        sql = "INSERT INTO ReportPublication (ReportId, Payload) VALUES (@report, @payload) ON CONFLICT (ReportId) DO UPDATE SET Payload = excluded.Payload",
        store = self.store,
    )]
    pub async fn save(&self, lease: &Lease, report: uuid::Uuid, payload: &str) -> fenced::Result<Outcome>;
}

fn main() {}
