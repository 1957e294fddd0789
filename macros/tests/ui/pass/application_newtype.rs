use fenced::{AsLease, Dialect, FencedTable, Lease, Outcome, Sqlite, Store, fenced_write};

/// The application's own lease: a report's, never another table's.
pub struct ReportLease(Lease);

impl AsLease for ReportLease {
    fn as_lease(&self) -> &Lease {
        &self.0
    }
}

/// A name the macro cannot recognise as a lease: marked explicitly.
pub struct Authority(ReportLease);

impl AsLease for Authority {
    fn as_lease(&self) -> &Lease {
        self.0.as_lease()
    }
}

pub struct Reports {
    store: Store<Sqlite>,
}

impl Reports {
    #[fenced_write(
        table = "ReportPublication",
        sql = "UPDATE ReportPublication SET Payload = @payload",
        store = self.store,
    )]
    pub async fn save(&self, lease: &ReportLease, payload: &str) -> fenced::Result<Outcome>;

    #[fenced_write(
        table = "ReportPublication",
        sql = "UPDATE ReportPublication SET Payload = @payload",
        store = self.store,
    )]
    pub async fn save_with(&self, #[lease] authority: Authority, payload: &str) -> fenced::Result<Outcome>;
}

fn main() {
    let table = FencedTable::default();
    assert_eq!(
        Reports::save_sql(&table, Dialect::Mssql).unwrap(),
        Reports::save_with_sql(&table, Dialect::Mssql).unwrap()
    );
}
