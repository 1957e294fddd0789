use fenced::{Dialect, Executor, Fenced, FencedTable, Outcome, Sqlite, fenced_write};

pub struct Reports;

impl Reports {
    /// A line of the report: another table, so it takes the fenced transaction.
    #[fenced_write(
        table = "ReportPublication",
        sql = "INSERT INTO ReportLine (ReportId, Position, Text) VALUES (@report, @position, @text)",
    )]
    pub async fn add_line<E: Executor>(
        &self,
        fenced: &Fenced<'_, E>,
        report: uuid::Uuid,
        position: i64,
        text: &str,
    ) -> fenced::Result<u64>;

    /// A PostgreSQL upsert of a line: written for PostgreSQL only.
    #[fenced_write(
        table = "ReportPublication",
        dialect = "postgres",
        sql = "INSERT INTO ReportLine (ReportId, Position, Text) VALUES (@report, @position, @text) \
               ON CONFLICT (ReportId, Position) DO UPDATE SET Text = @text",
    )]
    pub async fn put_line<E: Executor>(
        &self,
        fenced: &Fenced<'_, E>,
        report: uuid::Uuid,
        position: i64,
        text: &str,
    ) -> fenced::Result<u64>;

    /// The lease's own table, inside the same transaction.
    #[fenced_write(
        table = "ReportPublication",
        sql = "UPDATE ReportPublication SET Payload = @payload",
    )]
    pub async fn save<E: Executor>(&self, #[fenced] tx: &Fenced<'_, E>, payload: &str)
    -> fenced::Result<Outcome>;
}

fn main() {
    assert_eq!(
        Reports::add_line_sql(&FencedTable::default(), Dialect::Mssql).unwrap(),
        "INSERT INTO ReportLine (ReportId, Position, Text) VALUES (@P1, @P2, @P3)"
    );
    assert!(Reports::save_sql(&FencedTable::default(), Dialect::Sqlite).unwrap().starts_with(
        // fenced-lint: allow(unfenced-write) the expected start of the generated statement; the fence follows
        "UPDATE \"ReportPublication\" SET Payload = ?1 WHERE \"ReportId\" = ?2"
    ));
    assert_eq!(
        Reports::put_line_sql(&FencedTable::default(), Dialect::Postgres).unwrap(),
        "INSERT INTO ReportLine (ReportId, Position, Text) VALUES ($1, $2, $3) \
         ON CONFLICT (ReportId, Position) DO UPDATE SET Text = $3"
    );
    assert!(Reports::put_line_sql(&FencedTable::default(), Dialect::Mssql).is_err());
    let _ = Reports::add_line::<Sqlite>;
}
