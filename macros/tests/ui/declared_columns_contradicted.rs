// The repository's `fenced.toml` declares `ReportPublication` with the article's column
// names: an attribute that names one otherwise contradicts the declaration.
use fenced::{Lease, Outcome, Sqlite, Store, fenced_write};

pub struct Reports {
    store: Store<Sqlite>,
}

impl Reports {
    #[fenced_write(
        table = "ReportPublication",
        owner = "Holder",
        sql = "UPDATE ReportPublication SET Payload = @payload",
        store = self.store,
    )]
    pub async fn save(&self, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;
}

fn main() {}
