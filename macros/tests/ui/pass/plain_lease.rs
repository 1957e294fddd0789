use fenced::{Dialect, FencedTable, Lease, Outcome, Sqlite, Store, fenced_write};

pub struct Reports {
    store: Store<Sqlite>,
}

impl Reports {
    #[fenced_write(
        table = "ReportPublication",
        sql = "UPDATE ReportPublication SET Payload = @payload WHERE Draft = @draft",
        store = self.store,
    )]
    pub async fn save(&self, lease: &Lease, payload: &str, draft: bool) -> fenced::Result<Outcome>;
}

fn main() {
    assert!(Reports::save_sql(&FencedTable::default(), Dialect::Sqlite).unwrap().starts_with(
        // fenced-lint: allow(unfenced-write) the expected start of the generated statement; the fence follows
        "UPDATE \"ReportPublication\" SET Payload = ?1 WHERE (Draft = ?2) AND \"ReportId\" = ?3"
    ));
}
