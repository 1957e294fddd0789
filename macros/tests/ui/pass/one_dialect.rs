//! Methods that declare their one dialect use its own forms; `<method>_sql` is an error
//! for any other dialect, as the method is on a store of another database.

use fenced::{Backend, Dialect, Error, FencedTable, Lease, Outcome, Store, fenced_write};

pub struct Reports<B> {
    store: Store<B>,
}

impl<B: Backend> Reports<B> {
    #[fenced_write(
        table = "ReportPublication",
        sql = "UPDATE ReportPublication SET Payload = $$it's$$ || E'\\n' || @payload \
               WHERE Tags @> '{draft}' AND Meta ->> 'k' = N::text",
        store = self.store,
        dialect = "postgres",
    )]
    async fn on_postgres(&self, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

    #[fenced_write(
        table = "ReportPublication",
        sql = "UPDATE ReportPublication SET [Payload] = `Note` || @payload WHERE N == 1",
        store = self.store,
        dialect = "sqlite",
    )]
    async fn on_sqlite(&self, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;

    #[fenced_write(
        table = "ReportPublication",
        sql = "UPDATE ReportPublication SET [Pay]]load] = N'é' + @payload, N += 1",
        store = self.store,
        dialect = "mssql",
    )]
    async fn on_sql_server(&self, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;
}

fn main() {
    let table = FencedTable::default();
    type R = Reports<fenced::Sqlite>;
    let sql = R::on_postgres_sql(&table, Dialect::Postgres).unwrap();
    assert!(
        sql.starts_with(
            // fenced-lint: allow(unfenced-write) the start of the generated statement; the fence follows
            "UPDATE \"ReportPublication\" SET Payload = $$it's$$ || E'\\n' || $1 \
             WHERE (Tags @> '{draft}' AND Meta ->> 'k' = N::text) AND \"ReportId\" = $2"
        ),
        "{sql}"
    );
    let sql = R::on_sqlite_sql(&table, Dialect::Sqlite).unwrap();
    assert!(
        sql.starts_with(
            // fenced-lint: allow(unfenced-write) the start of the generated statement; the fence follows
            "UPDATE \"ReportPublication\" SET [Payload] = `Note` || ?1 WHERE (N == 1)"
        ),
        "{sql}"
    );
    let sql = R::on_sql_server_sql(&table, Dialect::Mssql).unwrap();
    assert!(
        sql.starts_with(
            // fenced-lint: allow(unfenced-write) the start of the generated statement; the fence follows
            "UPDATE [ReportPublication] SET [Pay]]load] = N'é' + @P1, N += 1 WHERE [ReportId] = @P2"
        ),
        "{sql}"
    );
    for (sql, other) in [
        (R::on_postgres_sql(&table, Dialect::Sqlite), "sqlite"),
        (R::on_sqlite_sql(&table, Dialect::Mssql), "sql server"),
        (R::on_sql_server_sql(&table, Dialect::Postgres), "postgresql"),
    ] {
        match sql {
            Err(Error::Config(message)) => {
                assert!(message.contains(&format!("not for {other}")), "{message}")
            }
            other => panic!("expected a configuration error, got {other:?}"),
        }
    }
}
