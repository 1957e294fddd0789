// The declared table: built by `fenced::table!`, and `#[fenced_write]` taking its
// column names from the declaration.
use fenced::{Lease, Outcome, Sqlite, Store, fenced_write};

pub struct Reports {
    store: Store<Sqlite>,
}

impl Reports {
    #[fenced_write(
        table = "ReportPublication",
        sql = "UPDATE ReportPublication SET Payload = @payload",
        store = self.store,
    )]
    pub async fn save(&self, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

    // Naming a column as declared is allowed: it says nothing new.
    #[fenced_write(
        table = "ReportPublication",
        owner = "LeaseOwner",
        sql = "UPDATE ReportPublication SET Payload = @payload",
        store = self.store,
    )]
    pub async fn save_again(&self, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;
}

fn main() {
    let table: fenced::Result<fenced::FencedTable> = fenced::table!("ReportPublication");
    assert_eq!(table.unwrap(), fenced::FencedTable::default());
    let _: fenced::Result<fenced::FencedTable> = fenced::table!("reportpublication",);
}
