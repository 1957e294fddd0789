use fenced::{Outcome, Sqlite, Store, fenced_write};

pub struct Reports {
    store: Store<Sqlite>,
}

impl Reports {
    #[fenced_write(
        table = "ReportPublication",
        sql = "UPDATE ReportPublication SET Payload = @payload",
        store = self.store,
    )]
    pub async fn save(&self, #[lease] lease: &String, payload: &str) -> fenced::Result<Outcome>;
}

fn main() {}
