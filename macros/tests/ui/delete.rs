use fenced::{Lease, Outcome, Sqlite, Store, fenced_write};

pub struct Reports {
    store: Store<Sqlite>,
}

impl Reports {
    #[fenced_write(
        table = "ReportPublication",
        sql = "DELETE FROM ReportPublication WHERE Draft = @draft",
        store = self.store,
    )]
    pub async fn discard(&self, lease: &Lease, draft: bool) -> fenced::Result<Outcome>;
}

fn main() {}
