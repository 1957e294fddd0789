use fenced::{Lease, Outcome, Sqlite, Store, fenced_write};

pub struct Reports {
    store: Store<Sqlite>,
}

impl Reports {
    #[fenced_write(
        table = "ReportPublication",
        sql = "MERGE ReportPublication AS t USING Drafts AS s ON t.ReportId = s.ReportId WHEN MATCHED THEN UPDATE SET Payload = @payload;",
        store = self.store,
    )]
    pub async fn save(&self, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;
}

fn main() {}
