use fenced::{Dialect, Executor, Fenced, FencedTable, Lease, Outcome, Sqlite, Store, fenced_write};

pub struct Reports {
    store: Store<Sqlite>,
}

impl Reports {
    /// A parameter whose name is not ASCII, on the lease's own table: `@größe` is its
    /// placeholder.
    #[fenced_write(
        table = "ReportPublication",
        sql = "UPDATE ReportPublication SET Payload = @größe",
        store = self.store,
    )]
    pub async fn resize(&self, lease: &Lease, größe: &str) -> fenced::Result<Outcome>;

    /// The same on another table, in a fenced transaction.
    #[fenced_write(
        table = "ReportPublication",
        sql = "INSERT INTO ReportLine (Text) VALUES (@größe)",
    )]
    pub async fn add_line<E: Executor>(&self, fenced: &Fenced<'_, E>, größe: &str)
    -> fenced::Result<u64>;
}

fn main() {
    assert!(Reports::resize_sql(&FencedTable::default(), Dialect::Postgres).unwrap().starts_with(
        // fenced-lint: allow(unfenced-write) the expected start of the generated statement; the fence follows
        "UPDATE \"ReportPublication\" SET Payload = $1 WHERE \"ReportId\" = $2"
    ));
    assert_eq!(
        Reports::add_line_sql(&FencedTable::default(), Dialect::Mssql).unwrap(),
        "INSERT INTO ReportLine (Text) VALUES (@P1)"
    );
}
