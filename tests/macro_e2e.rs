//! `#[fenced_write]` end to end, on a real SQLite file and a real PostgreSQL server: an
//! annotated repository method applies with the current lease, is refused with a
//! superseded or expired one (and the row keeps its value), and a caller's `OR` cannot
//! widen the write. Each check has a negative control: the same statement without the
//! fence, sent through the raw backend, does the damage the fence prevents.
//!
//! PostgreSQL must be reachable (`FENCED_PG_URL`, default
//! `host=127.0.0.1 port=5432 user=postgres dbname=test`); its tests fail, never skip,
//! when it is not. Each PostgreSQL test makes its own schema and drops it.

use std::time::Duration;

use fenced::{
    AsLease, Backend, ColumnType, Dialect, Executor, Fenced, FencedTable, Lease, Lend,
    OperationOutcome, Outcome, Resolution, Store, Value, fenced_write,
};
use uuid::Uuid;

/// The application's own lease type: a lease on a report.
pub struct ReportLease(Lease);

impl AsLease for ReportLease {
    fn as_lease(&self) -> &Lease {
        &self.0
    }
}

/// A repository over any backend.
pub struct Reports<B> {
    store: Store<B>,
}

impl<B: Backend> Reports<B> {
    #[fenced_write(
        table = "ReportPublication",
        sql = "UPDATE ReportPublication SET payload = @payload WHERE draft = @draft",
        store = self.store,
    )]
    async fn save(
        &self,
        lease: &ReportLease,
        payload: &str,
        draft: bool,
    ) -> fenced::Result<Outcome>;

    #[fenced_write(
        table = "ReportPublication",
        sql = "UPDATE ReportPublication SET payload = @payload \
               WHERE draft = @draft OR payload = @previous",
        store = self.store,
    )]
    async fn replace(
        &self,
        lease: &Lease,
        payload: &str,
        draft: bool,
        previous: &str,
    ) -> fenced::Result<Outcome>;

    #[fenced_write(
        table = "ReportPublication",
        sql = "UPDATE ReportPublication SET payload = @payload",
        store = self.store,
        publish_once,
    )]
    async fn publish(&self, lease: Lease, payload: String) -> fenced::Result<Outcome>;

    /// The body, with an operation id recorded with it: a retry after a lost
    /// acknowledgement applies it once.
    #[fenced_write(
        table = "ReportPublication",
        sql = "UPDATE ReportPublication SET payload = @payload",
        store = self.store,
        operation = op,
    )]
    async fn save_once(
        &self,
        lease: &Lease,
        op: Uuid,
        payload: &str,
    ) -> fenced::Result<OperationOutcome>;

    /// A write in PostgreSQL's own forms (`$$...$$`, `::`): only a PostgreSQL store
    /// sends it.
    #[fenced_write(
        table = "ReportPublication",
        sql = "UPDATE ReportPublication SET payload = @payload || $$ (checked)$$ \
               WHERE draft::int = 1",
        store = self.store,
        dialect = "postgres",
    )]
    async fn save_on_postgres(&self, lease: &Lease, payload: &str) -> fenced::Result<Outcome>;
}

/// The repository behind a trait, as an application that swaps it in tests writes it.
pub trait ReportRepository {
    /// Saves a report's body while `lease` holds it.
    fn save_body(
        &self,
        lease: &ReportLease,
        payload: &str,
    ) -> impl Future<Output = fenced::Result<Outcome>> + Send;
}

impl<B: Backend> ReportRepository for Reports<B> {
    #[fenced_write(
        table = "ReportPublication",
        sql = "UPDATE ReportPublication SET payload = @payload",
        store = self.store,
        trait_impl,
    )]
    async fn save_body(&self, lease: &ReportLease, payload: &str) -> fenced::Result<Outcome>;
}

/// A report's lines: another table than the lease's, written only inside a fenced
/// transaction.
pub struct ReportLines;

impl ReportLines {
    #[fenced_write(
        table = "ReportPublication",
        sql = "INSERT INTO ReportLine (Report, Seq, Body) VALUES (@report, @seq, @body)"
    )]
    async fn add<E: Executor>(
        &self,
        fenced: &Fenced<'_, E>,
        report: String,
        seq: i64,
        body: &str,
    ) -> fenced::Result<u64>;

    /// A line in SQLite's upsert form, so written for SQLite only: on another database
    /// it is a configuration error, and nothing is sent.
    #[fenced_write(
        table = "ReportPublication",
        dialect = "sqlite",
        sql = "INSERT INTO ReportLine (Report, Seq, Body) VALUES (@report, @seq, @body) \
               ON CONFLICT DO NOTHING"
    )]
    async fn keep<E: Executor>(
        &self,
        fenced: &Fenced<'_, E>,
        report: String,
        seq: i64,
        body: &str,
    ) -> fenced::Result<u64>;

    /// The lease's own row, in the same transaction.
    #[fenced_write(
        table = "ReportPublication",
        sql = "UPDATE ReportPublication SET payload = @payload"
    )]
    async fn save<E: Executor>(
        &self,
        fenced: &Fenced<'_, E>,
        payload: &str,
    ) -> fenced::Result<Outcome>;
}

fn table() -> FencedTable {
    FencedTable::builder()
        .column("payload", ColumnType::Text)
        .column("draft", ColumnType::Bool)
        .build()
        .expect("valid table")
}

const TTL: Duration = Duration::from_secs(60);

async fn report<B: Backend>(store: &Store<B>, payload: &str, draft: bool) -> Uuid {
    let id = Uuid::new_v4();
    assert!(store.provision(id).await.expect("provision"));
    let d = store.dialect();
    let sql = format!(
        // fenced-lint: allow(unfenced-write) test setup writes the application columns of a row nobody leases yet
        "UPDATE \"ReportPublication\" SET payload = {}, draft = {} WHERE \"ReportId\" = {}",
        d.placeholder(1),
        d.placeholder(2),
        d.placeholder(3)
    );
    let rows = store
        .backend()
        .execute(&sql, &[payload.into(), draft.into(), Value::Uuid(id)])
        .await
        .expect("set up the row");
    assert_eq!(rows, 1);
    id
}

async fn payload<B: Backend>(store: &Store<B>, id: Uuid) -> String {
    let sql = format!(
        "SELECT payload FROM \"ReportPublication\" WHERE \"ReportId\" = {}",
        store.dialect().placeholder(1)
    );
    let row = store
        .backend()
        .query_row(&sql, &[Value::Uuid(id)])
        .await
        .expect("read the row")
        .expect("the row exists");
    row[0].as_str().expect("payload is text").to_owned()
}

async fn acquire<B: Backend>(store: &Store<B>, id: Uuid, ttl: Duration) -> Lease {
    store
        .try_acquire(id, ttl)
        .await
        .expect("acquire")
        .expect("the row is free")
}

/// Waits until the database's clock has passed the row's expiry.
async fn until_expired<B: Backend>(store: &Store<B>, id: Uuid) {
    let d = store.dialect();
    let sql = format!(
        "SELECT COUNT(*) FROM \"ReportPublication\" WHERE \"ReportId\" = {} \
         AND \"LeaseUntilUtc\" <= {}",
        d.placeholder(1),
        d.clock()
    );
    loop {
        let expired = store
            .backend()
            .query_i64(&sql, &[Value::Uuid(id)])
            .await
            .expect("read the expiry");
        if expired == Some(1) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The method's own statement without the fence, for the negative controls: everything
/// before the fence, with the caller's condition unwrapped.
fn unfenced(sql: &str) -> String {
    let cut = sql
        .find(" AND \"ReportId\"")
        .or_else(|| sql.find(" AND [ReportId]"))
        .expect("the fence follows the condition");
    sql[..cut]
        .replacen("WHERE (", "WHERE ", 1)
        .trim_end_matches(')')
        .to_owned()
}

/// The method's statement with the fence appended but the caller's condition not
/// parenthesised: the mistake the macro's parentheses prevent.
fn unparenthesised(sql: &str) -> String {
    sql.replacen("WHERE (", "WHERE ", 1)
        .replacen(") AND", " AND", 1)
}

fn lease_params(lease: &Lease) -> [Value; 3] {
    [
        Value::from(lease.key()),
        Value::I64(lease.generation()),
        Value::Uuid(lease.owner()),
    ]
}

async fn current_lease_applies<B: Backend>(store: Store<B>) {
    let id = report(&store, "draft body", true).await;
    let reports = Reports { store };
    let lease = ReportLease(acquire(&reports.store, id, TTL).await);
    let outcome = reports
        .save(&lease, "final body", true)
        .await
        .expect("save");
    assert_eq!(outcome, Outcome::Applied);
    assert_eq!(payload(&reports.store, id).await, "final body");

    // The caller's own condition still holds: a non-draft row is not written.
    let outcome = reports.save(&lease, "other", false).await.expect("save");
    assert_eq!(outcome, Outcome::Refused);
    assert_eq!(payload(&reports.store, id).await, "final body");
}

/// A method with an operation id applies once: the id resolves applied, a retry with it
/// writes nothing, and a stale lease's attempt is refused and records nothing.
/// Negative control: the plain method, retried, writes a second time.
async fn an_operation_id_applies_once<B: Backend>(store: Store<B>) {
    let id = report(&store, "initial", true).await;
    let reports = Reports { store };
    let lease = acquire(&reports.store, id, TTL).await;
    let op = Uuid::new_v4();
    let first = reports.save_once(&lease, op, "first").await.expect("save");
    assert_eq!(first, OperationOutcome::Applied);
    let applied = Resolution::Applied {
        generation: lease.generation(),
    };
    assert_eq!(reports.store.resolve(op).await.expect("resolve"), applied);
    let retry = reports
        .save_once(&lease, op, "retried")
        .await
        .expect("save");
    assert_eq!(
        retry,
        OperationOutcome::AlreadyApplied {
            generation: lease.generation()
        }
    );
    assert_eq!(payload(&reports.store, id).await, "first");

    // Released, the lease is stale; its next attempt is refused and records nothing.
    assert!(
        reports
            .store
            .release(&lease)
            .await
            .expect("release")
            .is_applied()
    );
    let successor = ReportLease(acquire(&reports.store, id, TTL).await);
    let late = Uuid::new_v4();
    let refused = reports
        .save_once(&lease, late, "stale")
        .await
        .expect("save");
    assert_eq!(refused, OperationOutcome::Refused);
    assert_eq!(
        reports.store.resolve(late).await.expect("resolve"),
        Resolution::NotApplied
    );
    assert_eq!(payload(&reports.store, id).await, "first");

    // Negative control: the plain method has nothing to know a retry by; it applies
    // again.
    for _ in 0..2 {
        let again = reports
            .save(&successor, "retried", true)
            .await
            .expect("save");
        assert_eq!(again, Outcome::Applied);
    }
}

async fn superseded_lease_is_refused<B: Backend>(store: Store<B>) {
    let id = report(&store, "initial", true).await;
    let reports = Reports { store };
    let stale = ReportLease(acquire(&reports.store, id, Duration::from_millis(1)).await);
    until_expired(&reports.store, id).await;
    let successor = ReportLease(acquire(&reports.store, id, TTL).await);
    assert!(successor.0.generation() > stale.0.generation());
    let outcome = reports
        .save(&successor, "successor's result", true)
        .await
        .expect("save");
    assert_eq!(outcome, Outcome::Applied);

    let outcome = reports
        .save(&stale, "stale result", true)
        .await
        .expect("save");
    assert_eq!(outcome, Outcome::Refused);
    assert_eq!(payload(&reports.store, id).await, "successor's result");

    // Negative control: the same UPDATE without the fence overwrites the successor.
    let sql = unfenced(
        Reports::<B>::save_sql(reports.store.table(), reports.store.dialect())
            .expect("the store's statement"),
    );
    let rows = reports
        .store
        .backend()
        .execute(&sql, &["stale result".into(), true.into()])
        .await
        .expect("unfenced update");
    assert_eq!(rows, 1);
    assert_eq!(payload(&reports.store, id).await, "stale result");
}

/// Through the trait, from code that knows only the trait: the current lease's write
/// applies, the superseded lease's is refused.
async fn through_a_trait<B: Backend>(store: Store<B>) {
    async fn save(repository: &impl ReportRepository, lease: &ReportLease, body: &str) -> Outcome {
        repository.save_body(lease, body).await.expect("save")
    }

    let id = report(&store, "initial", true).await;
    let reports = Reports { store };
    let stale = ReportLease(acquire(&reports.store, id, TTL).await);
    assert_eq!(save(&reports, &stale, "first").await, Outcome::Applied);
    assert_eq!(
        reports.store.release(&stale.0).await.expect("release"),
        Outcome::Applied
    );
    let successor = ReportLease(acquire(&reports.store, id, TTL).await);
    assert_eq!(
        save(&reports, &successor, "successor's result").await,
        Outcome::Applied
    );
    assert_eq!(
        save(&reports, &stale, "stale result").await,
        Outcome::Refused
    );
    assert_eq!(payload(&reports.store, id).await, "successor's result");
}

/// A method written for PostgreSQL alone: fenced there like any other; on another
/// database an error that says so, and the row is unchanged.
async fn one_dialect_only<B: Backend>(store: Store<B>) {
    let id = report(&store, "initial", true).await;
    let reports = Reports { store };
    let lease = acquire(&reports.store, id, TTL).await;
    let result = reports.save_on_postgres(&lease, "body").await;
    let dialect = reports.store.dialect();
    if dialect == Dialect::Postgres {
        assert_eq!(result.expect("save"), Outcome::Applied);
        assert_eq!(payload(&reports.store, id).await, "body (checked)");
        assert_eq!(
            reports.store.release(&lease).await.expect("release"),
            Outcome::Applied
        );
        let outcome = reports
            .save_on_postgres(&lease, "stale")
            .await
            .expect("save");
        assert_eq!(outcome, Outcome::Refused);
        assert_eq!(payload(&reports.store, id).await, "body (checked)");
    } else {
        match result {
            Err(fenced::Error::Config(message)) => assert!(
                message.contains("written for postgresql only")
                    && message.contains(&format!("not for {dialect}")),
                "{message}"
            ),
            other => panic!("{dialect}: expected a configuration error, got {other:?}"),
        }
        assert_eq!(payload(&reports.store, id).await, "initial");
        // Control: the portable method applies with the same lease on this store.
        let outcome = reports
            .save(&ReportLease(lease), "body", true)
            .await
            .expect("save");
        assert_eq!(outcome, Outcome::Applied);
    }
}

async fn expired_lease_is_refused<B: Backend>(store: Store<B>) {
    let id = report(&store, "initial", true).await;
    let reports = Reports { store };
    let lease = ReportLease(acquire(&reports.store, id, Duration::from_millis(1)).await);
    until_expired(&reports.store, id).await;
    let outcome = reports.save(&lease, "late", true).await.expect("save");
    assert_eq!(outcome, Outcome::Refused);
    assert_eq!(payload(&reports.store, id).await, "initial");

    // Negative control: the fence without its expiry check would have let it through.
    let d = reports.store.dialect();
    let expiry_column = fenced::Identifier::new("LeaseUntilUtc").unwrap().quoted(d);
    let expiry = format!(" AND {expiry_column} > {}", d.clock());
    let sql = Reports::<B>::save_sql(reports.store.table(), d).expect("the store's statement");
    assert!(sql.contains(&expiry), "{sql}");
    let mut params: Vec<Value> = vec!["late".into(), true.into()];
    params.extend(lease_params(&lease.0));
    let rows = reports
        .store
        .backend()
        .execute(&sql.replacen(&expiry, "", 1), &params)
        .await
        .expect("update without expiry check");
    assert_eq!(rows, 1);
    assert_eq!(payload(&reports.store, id).await, "late");
}

async fn or_cannot_widen<B: Backend>(store: Store<B>) {
    let mine = report(&store, "old", false).await;
    // Another worker's row, which `draft = true` alone would match.
    let theirs = report(&store, "old", true).await;
    let reports = Reports { store };
    let lease = acquire(&reports.store, mine, TTL).await;
    let outcome = reports
        .replace(&lease, "new", true, "old")
        .await
        .expect("replace");
    assert_eq!(outcome, Outcome::Applied);
    assert_eq!(payload(&reports.store, mine).await, "new");
    assert_eq!(payload(&reports.store, theirs).await, "old");

    // Negative control: without the parentheses, `OR` escapes the fence and the write
    // reaches the row this lease does not cover.
    let sql = unparenthesised(
        Reports::<B>::replace_sql(reports.store.table(), reports.store.dialect())
            .expect("the store's statement"),
    );
    let mut params: Vec<Value> = vec!["new".into(), true.into(), "old".into()];
    params.extend(lease_params(&lease));
    let rows = reports
        .store
        .backend()
        .execute(&sql, &params)
        .await
        .expect("unparenthesised update");
    assert_eq!(rows, 1);
    assert_eq!(payload(&reports.store, theirs).await, "new");
}

async fn publishes_once<B: Backend>(store: Store<B>) {
    let id = report(&store, "draft", true).await;
    let reports = Reports { store };
    let lease = acquire(&reports.store, id, TTL).await;
    let first = reports
        .publish(lease.clone(), "published".to_owned())
        .await
        .expect("publish");
    assert_eq!(first, Outcome::Applied);
    let again = reports
        .publish(lease.clone(), "again".to_owned())
        .await
        .expect("publish");
    assert_eq!(again, Outcome::Refused);
    assert_eq!(payload(&reports.store, id).await, "published");

    // The next generation publishes once more.
    assert_eq!(
        reports.store.release(&lease).await.expect("release"),
        Outcome::Applied
    );
    let next = acquire(&reports.store, id, TTL).await;
    let outcome = reports
        .publish(next, "next".to_owned())
        .await
        .expect("publish");
    assert_eq!(outcome, Outcome::Applied);
    assert_eq!(payload(&reports.store, id).await, "next");
}

/// The lines of report `id` whose body is `body`.
/// Makes the lines table, a table other than the lease's, afresh.
async fn create_lines_table<B: Backend>(store: &Store<B>) {
    store
        .backend()
        .execute_batch(
            "DROP TABLE IF EXISTS ReportLine; CREATE TABLE ReportLine \
             (Report VARCHAR(36) NOT NULL, Seq BIGINT NOT NULL, Body VARCHAR(200) NOT NULL)",
        )
        .await
        .expect("create the lines table");
}

/// Releases `lease` and lets a successor take the row: `lease` is stale from here on.
async fn supersede<B: Backend>(store: &Store<B>, lease: &Lease, id: Uuid) {
    assert_eq!(
        store.release(lease).await.expect("release"),
        Outcome::Applied
    );
    let successor = acquire(store, id, TTL).await;
    assert!(successor.generation() > lease.generation());
}

async fn lines<B: Backend>(store: &Store<B>, id: Uuid, body: &str) -> i64 {
    let d = store.dialect();
    let sql = format!(
        "SELECT COUNT(*) FROM ReportLine WHERE Report = {} AND Body = {}",
        d.placeholder(1),
        d.placeholder(2)
    );
    store
        .backend()
        .query_i64(&sql, &[id.to_string().into(), body.into()])
        .await
        .expect("count the lines")
        .expect("a count")
}

/// `#[fenced_write]` methods in a fenced transaction: a report's lines (another table)
/// and its body commit together under the current lease; a superseded lease gets no
/// transaction, so its lines are never written. Negative control: the same `INSERT`
/// outside a fenced transaction writes the stale worker's line.
async fn lines_in_a_fenced_transaction<B: Lend>(store: Store<B>) {
    create_lines_table(&store).await;
    let id = report(&store, "draft", true).await;
    let repository = ReportLines;

    let lease = acquire(&store, id, TTL).await;
    let tx = store
        .transaction(&lease, TTL)
        .await
        .expect("begin")
        .expect("the lease holds");
    for (n, body) in [(1, "first line"), (2, "second line")] {
        let rows = repository.add(&tx, id.to_string(), n, body).await;
        assert_eq!(rows.expect("add a line"), 1);
    }
    let kept = repository.keep(&tx, id.to_string(), 3, "kept line").await;
    let sqlite = store.dialect() == Dialect::Sqlite;
    match kept {
        Ok(rows) => assert!(sqlite && rows == 1, "{:?}: {rows}", store.dialect()),
        Err(error) => assert!(
            !sqlite && matches!(error, fenced::Error::Config(_)),
            "{:?}: {error}",
            store.dialect()
        ),
    }
    let saved = repository.save(&tx, "published body").await.expect("save");
    assert_eq!(saved, Outcome::Applied);
    tx.commit().await.expect("commit");
    assert_eq!(lines(&store, id, "first line").await, 1);
    assert_eq!(lines(&store, id, "second line").await, 1);
    assert_eq!(lines(&store, id, "kept line").await, i64::from(sqlite));
    assert_eq!(payload(&store, id).await, "published body");

    supersede(&store, &lease, id).await;
    let stale = store.transaction(&lease, TTL).await.expect("begin");
    assert!(stale.is_none(), "a stale lease gets no fenced transaction");
    assert_eq!(lines(&store, id, "stale line").await, 0);
    assert_eq!(payload(&store, id).await, "published body");

    // Negative control: the same statement, not in a fenced transaction, lands.
    let sql = ReportLines::add_sql(store.table(), store.dialect()).expect("the statement");
    let values = [id.to_string().into(), Value::I64(3), "stale line".into()];
    let rows = store.backend().execute(sql, &values).await.expect("insert");
    assert_eq!(rows, 1);
    assert_eq!(lines(&store, id, "stale line").await, 1);

    // The transaction's table must be the declared one.
    let error = ReportLines::add_sql(
        &FencedTable::builder()
            .table("ReportArchive")
            .build()
            .expect("valid table"),
        store.dialect(),
    )
    .expect_err("another lease table");
    assert!(error.to_string().contains("ReportArchive"), "{error}");
    store
        .backend()
        .execute_batch("DROP TABLE ReportLine")
        .await
        .expect("drop the lines table");
}

#[test]
fn sql_per_dialect() {
    let table = FencedTable::default();
    let fence = |d: Dialect, first: usize| fenced::fence_predicate(d, &table, first);
    let save = |d: Dialect| Reports::<fenced::Sqlite>::save_sql(&table, d).unwrap();
    assert_eq!(
        save(Dialect::Postgres),
        format!(
            // fenced-lint: allow(unfenced-write) the expected generated statement; the fence follows, rendered by the guard
            "UPDATE \"ReportPublication\" SET payload = $1 WHERE (draft = $2) AND {}",
            fence(Dialect::Postgres, 3)
        )
    );
    assert_eq!(
        save(Dialect::Sqlite),
        format!(
            // fenced-lint: allow(unfenced-write) the expected generated statement; the fence follows, rendered by the guard
            "UPDATE \"ReportPublication\" SET payload = ?1 WHERE (draft = ?2) AND {}",
            fence(Dialect::Sqlite, 3)
        )
    );
    assert_eq!(
        save(Dialect::Mssql),
        format!(
            // fenced-lint: allow(unfenced-write) the expected generated statement; the fence follows, rendered by the guard
            "UPDATE [ReportPublication] SET payload = @P1 WHERE (draft = @P2) AND {}",
            fence(Dialect::Mssql, 3)
        )
    );
    // Written out once, as a reader would check it.
    assert!(save(Dialect::Mssql).starts_with(
        "UPDATE [ReportPublication] SET payload = @P1 WHERE (draft = @P2) AND [ReportId] = @P3 \
         AND [Generation] = @P4 AND [LeaseOwner] = @P5 AND [LeaseUntilUtc] > SYSUTCDATETIME() \
         AND [LeaseEpoch] = (SELECT [Epoch] FROM [FencedEpoch] WHERE [Id] = 1)"
    ));

    // The caller's `OR` stays inside its parentheses.
    assert!(
        Reports::<fenced::Sqlite>::replace_sql(&table, Dialect::Postgres)
            .unwrap()
            .starts_with(
                // fenced-lint: allow(unfenced-write) the expected generated statement; the fence follows, rendered by the guard
                "UPDATE \"ReportPublication\" SET payload = $1 \
             WHERE (draft = $2 OR payload = $3) AND \"ReportId\" = $4"
            )
    );

    // Publish once: one caller parameter, so the fence starts at 2.
    for d in [Dialect::Postgres, Dialect::Sqlite, Dialect::Mssql] {
        let name = FencedTable::default().name().quoted(d);
        assert_eq!(
            Reports::<fenced::Sqlite>::publish_sql(&table, d).unwrap(),
            format!(
                "UPDATE {name} SET payload = {}, {} WHERE {} AND {}",
                d.placeholder(1),
                fenced::publish_once_assignment(d, &table, 2),
                fence(d, 2),
                fenced::publish_once_predicate(d, &table, 2)
            )
        );
    }
}

#[cfg(feature = "sqlite")]
mod sqlite {
    use fenced::Sqlite;

    use super::*;

    async fn store_for(dir: &tempfile::TempDir, table: FencedTable) -> Store<Sqlite> {
        let backend = Sqlite::open(dir.path().join("reports.db"))
            .await
            .expect("open sqlite");
        let store = Store::new(backend, table);
        store.create_schema().await.expect("create schema");
        store
    }

    macro_rules! sqlite_tests {
        ($($name:ident),* $(,)?) => {$(
            #[tokio::test]
            async fn $name() {
                let dir = tempfile::tempdir().expect("temp dir");
                super::$name(store_for(&dir, table()).await).await;
            }
        )*};
    }

    sqlite_tests!(
        current_lease_applies,
        an_operation_id_applies_once,
        superseded_lease_is_refused,
        expired_lease_is_refused,
        or_cannot_widen,
        publishes_once,
        through_a_trait,
        one_dialect_only,
    );

    sqlite_tests!(lines_in_a_fenced_transaction);

    /// `#[fenced_write]` methods on the service's own connection: a transaction of its
    /// own sqlx pool, fenced with `store.on(..)?.fence(..)`, commits a line and the
    /// report's body under the current lease; a superseded lease gets no fence, so the
    /// service's transaction writes nothing through the methods. Negative control: the
    /// same line inserted in that transaction without the fence lands.
    #[cfg(feature = "sqlx-sqlite")]
    #[tokio::test]
    async fn lines_on_the_services_own_transaction() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = store_for(&dir, table()).await;
        create_lines_table(&store).await;
        let id = report(&store, "draft", true).await;
        let options = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(dir.path().join("reports.db"))
            .busy_timeout(Duration::from_secs(10));
        let pool = sqlx::sqlite::SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options)
            .await
            .expect("the service's own pool");
        let repository = ReportLines;

        let lease = acquire(&store, id, TTL).await;
        let mut tx = pool.begin().await.expect("begin");
        {
            let fenced = store
                .on(&mut tx)
                .expect("a SQLite connection")
                .fence(&lease)
                .await
                .expect("fence")
                .expect("the lease holds");
            let rows = repository
                .add(&fenced, id.to_string(), 1, "first line")
                .await;
            assert_eq!(rows.expect("add a line"), 1);
            let saved = repository.save(&fenced, "published body").await;
            assert_eq!(saved.expect("save"), Outcome::Applied);
        }
        tx.commit().await.expect("commit");
        assert_eq!(lines(&store, id, "first line").await, 1);
        assert_eq!(payload(&store, id).await, "published body");

        supersede(&store, &lease, id).await;
        let mut tx = pool.begin().await.expect("begin");
        let stale = store
            .on(&mut tx)
            .expect("a SQLite connection")
            .fence(&lease)
            .await
            .expect("fence");
        assert!(stale.is_none(), "a stale lease gets no fence");

        // Negative control: the same line, in the service's transaction but unfenced.
        sqlx::query("INSERT INTO ReportLine (Report, Seq, Body) VALUES (?1, 2, 'stale line')")
            .bind(id.to_string())
            .execute(&mut *tx)
            .await
            .expect("insert");
        tx.commit().await.expect("commit");
        assert_eq!(lines(&store, id, "stale line").await, 1);
        assert_eq!(payload(&store, id).await, "published body");
        pool.close().await;
    }

    #[tokio::test]
    async fn a_store_for_another_table_is_an_error_not_a_write() {
        let dir = tempfile::tempdir().expect("temp dir");
        let right = store_for(&dir, table()).await;
        let id = report(&right, "initial", true).await;
        let lease = ReportLease(acquire(&right, id, TTL).await);
        let other = FencedTable::builder()
            .table("ReportArchive")
            .column("payload", ColumnType::Text)
            .column("draft", ColumnType::Bool)
            .build()
            .expect("valid table");
        let wrong = Reports {
            store: store_for(&dir, other).await,
        };
        let error = wrong
            .save(&lease, "written", true)
            .await
            .expect_err("the store's table is not the declared one");
        assert!(matches!(error, fenced::Error::Config(_)), "{error:?}");
        assert!(error.to_string().contains("ReportArchive"), "{error}");
        assert_eq!(payload(&right, id).await, "initial");

        // The same for a table of the declared name whose owner column is another.
        let renamed = FencedTable::builder()
            .owner_column("Holder")
            .column("payload", ColumnType::Text)
            .column("draft", ColumnType::Bool)
            .build()
            .expect("valid table");
        let other_dir = tempfile::tempdir().expect("temp dir");
        let wrong = Reports {
            store: store_for(&other_dir, renamed).await,
        };
        let error = wrong
            .save(&lease, "written", true)
            .await
            .expect_err("the store's owner column is not the declared one");
        assert!(error.to_string().contains("Holder"), "{error}");
        assert_eq!(payload(&right, id).await, "initial");

        // Control: the same lease through a store for the declared table applies.
        let reports = Reports { store: right };
        let outcome = reports.save(&lease, "written", true).await.expect("save");
        assert_eq!(outcome, Outcome::Applied);
    }
}

#[cfg(feature = "postgres")]
mod postgres {
    use fenced::Postgres;

    use super::*;

    const DEFAULT_URL: &str = "host=127.0.0.1 port=5432 user=postgres dbname=test";

    fn url() -> String {
        std::env::var("FENCED_PG_URL").unwrap_or_else(|_| DEFAULT_URL.to_owned())
    }

    /// A schema of its own, found through the connections' `search_path`, so that the
    /// declared table name `ReportPublication` is the store's.
    struct Schema {
        admin: Postgres,
        name: String,
    }

    impl Schema {
        async fn new() -> Self {
            let url = url();
            let admin = match Postgres::connect_with(&url, 1).await {
                Ok(admin) => admin,
                Err(error) => panic!(
                    "PostgreSQL is not reachable at `{url}` ({error}: {:?}). Start it with \
                     `pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main \
                     start`, or point FENCED_PG_URL at a server.",
                    std::error::Error::source(&error)
                ),
            };
            let name = format!("fenced_macro_{}", Uuid::new_v4().simple());
            admin
                .execute_batch(&format!("CREATE SCHEMA \"{name}\""))
                .await
                .expect("create the test schema");
            Schema { admin, name }
        }

        async fn store(&self) -> Store<Postgres> {
            let config = format!("{} options='-c search_path={}'", url(), self.name);
            let backend = Postgres::connect_with(&config, 2)
                .await
                .expect("connect to postgresql");
            let store = Store::new(backend, table());
            store.create_schema().await.expect("create schema");
            store
        }

        async fn drop(self) {
            self.admin
                .execute_batch(&format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.name))
                .await
                .expect("drop the test schema");
        }
    }

    macro_rules! postgres_tests {
        ($($name:ident),* $(,)?) => {$(
            #[tokio::test]
            async fn $name() {
                let schema = Schema::new().await;
                super::$name(schema.store().await).await;
                schema.drop().await;
            }
        )*};
    }

    postgres_tests!(
        current_lease_applies,
        an_operation_id_applies_once,
        superseded_lease_is_refused,
        expired_lease_is_refused,
        or_cannot_widen,
        publishes_once,
        through_a_trait,
        one_dialect_only,
    );

    postgres_tests!(lines_in_a_fenced_transaction);
}

#[cfg(feature = "mssql")]
mod mssql {
    use fenced::{Mssql, MssqlOptions};

    use super::*;

    /// SQL Server at `FENCED_MSSQL_URL`; `None` (said once) without it, a failure when
    /// `CI` is set.
    fn url() -> Option<String> {
        if let Ok(url) = std::env::var("FENCED_MSSQL_URL") {
            return Some(url);
        }
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but FENCED_MSSQL_URL is not: the SQL Server tests must run in CI"
        );
        eprintln!("SQL Server #[fenced_write] tests did not run: FENCED_MSSQL_URL is not set");
        None
    }

    /// The declared name `ReportPublication` has no schema, so the tables are the
    /// login's default schema's (`dbo`), shared by whoever runs this: the cases run one
    /// after another in this one test, each on tables made anew.
    async fn fresh_store(url: &str) -> Store<Mssql> {
        let backend = Mssql::connect_with_options(url, MssqlOptions::default().max_connections(2))
            .await
            .expect("connect to sql server");
        drop_tables(&backend).await;
        let store = Store::new(backend, table());
        store.create_schema().await.expect("create schema");
        store
    }

    async fn drop_tables(backend: &Mssql) {
        backend
            .execute_batch(
                "DROP TABLE IF EXISTS [ReportPublication]; DROP TABLE IF EXISTS [FencedEpoch]; \
                 DROP TABLE IF EXISTS [FencedOperation]",
            )
            .await
            .expect("drop the test tables");
    }

    #[tokio::test]
    async fn every_case_on_sql_server() {
        let Some(url) = url() else { return };
        current_lease_applies(fresh_store(&url).await).await;
        an_operation_id_applies_once(fresh_store(&url).await).await;
        superseded_lease_is_refused(fresh_store(&url).await).await;
        expired_lease_is_refused(fresh_store(&url).await).await;
        or_cannot_widen(fresh_store(&url).await).await;
        publishes_once(fresh_store(&url).await).await;
        through_a_trait(fresh_store(&url).await).await;
        one_dialect_only(fresh_store(&url).await).await;
        lines_in_a_fenced_transaction(fresh_store(&url).await).await;
        drop_tables(fresh_store(&url).await.backend()).await;
    }
}
