//! The README's guard and `#[fenced_write]` examples, run as the one program they are, on
//! SQLite always, on PostgreSQL (`FENCED_PG_URL`, default
//! `host=127.0.0.1 port=5432 user=postgres dbname=test`; a failure, never a skip, when it
//! is unreachable) and on SQL Server when `FENCED_MSSQL_URL` is set (a failure when `CI`
//! is set without it). `readme_blocks_are_this_file` keeps the two texts identical: every
//! `rust` block of the README's guard and `#[fenced_write]` sections must appear in this
//! file verbatim.

// ---- README: the guard ----
use fenced::{Backend, ColumnType, FencedTable, Outcome, Store, Value};
use std::time::Duration;

/// The repository over any backend: `Postgres::connect(..)`, `Sqlite::open(..)`,
/// `Mssql::connect(..)`.
fn reports<B: Backend>(backend: B) -> fenced::Result<Reports<B>> {
    // The article's table (ReportId, Generation, LeaseOwner, LeaseUntilUtc, ...) and the
    // application's columns; every name validated and quoted as declared.
    let table = FencedTable::builder()
        .table("ReportPublication")
        .column("Payload", ColumnType::Text)
        .column("Draft", ColumnType::Bool)
        .build()?;
    let store = Store::new(backend, table);
    Ok(Reports { store })
}

async fn rebuild<B: Backend>(reports: &Reports<B>, report: uuid::Uuid) -> fenced::Result<Outcome> {
    let store = &reports.store;
    store.create_schema().await?; // idempotent
    store.provision(report).await?; // idempotent; never resets the generation

    let Some(lease) = store.try_acquire(report, Duration::from_secs(30)).await? else {
        return Ok(Outcome::Refused); // another worker holds it
    };
    let lease = ReportLease(lease);
    let payload = build_report(report).await;
    // The application's own fenced write (next section): applied only while the lease holds.
    if reports.save(&lease, &payload, true).await? == Outcome::Refused {
        return Ok(Outcome::Refused); // the lease was lost: discard the build
    }
    let published = store
        .publish_and_release(&lease, &[("Draft", Value::from(false))])
        .await?;
    match published {
        Outcome::Applied => {
            // The publication ended the lease: a late write through it is refused.
            let late = reports.save(&lease, "a late draft", true).await?;
            eprintln!("a save through the spent lease: {late:?}");
        }
        // Ownership moved on, the lease expired, or this generation already published:
        // discard the build, never re-attach it to a new lease.
        Outcome::Refused => eprintln!("publication of {report} refused"),
    }
    Ok(published)
}

async fn build_report(report: uuid::Uuid) -> String {
    format!("the report on {report}")
}
// ---- end of the guard ----

// ---- README: #[fenced_write] ----
use fenced::{AsLease, Lease, fenced_write};

/// A lease on one report, as the application hands it around.
pub struct ReportLease(Lease);

impl AsLease for ReportLease {
    fn as_lease(&self) -> &Lease {
        &self.0
    }
}

/// The application's repository of reports.
pub struct Reports<B> {
    store: Store<B>,
}

impl<B: Backend> Reports<B> {
    /// Saves a report's body, only while `lease` holds the report.
    #[fenced_write(
        table = "ReportPublication",
        sql = r#"UPDATE ReportPublication SET "Payload" = @payload, "Draft" = @draft"#,
        store = self.store,
    )]
    pub async fn save(
        &self,
        lease: &ReportLease,
        payload: &str,
        draft: bool,
    ) -> fenced::Result<Outcome>;
}
// ---- end of #[fenced_write] ----

use uuid::Uuid;

const TTL: Duration = Duration::from_secs(60);

/// The number of rows (0 or 1) for `report` that hold exactly these values.
async fn rows_with<B: Backend>(
    reports: &Reports<B>,
    report: Uuid,
    payload: &str,
    draft: bool,
    published: i64,
) -> i64 {
    let store = &reports.store;
    let d = store.dialect();
    let sql = format!(
        "SELECT COUNT(*) FROM \"ReportPublication\" WHERE \"ReportId\" = {} \
         AND \"Payload\" = {} AND \"Draft\" = {} AND \"PublishedGeneration\" = {}",
        d.placeholder(1),
        d.placeholder(2),
        d.placeholder(3),
        d.placeholder(4),
    );
    let params = [
        Value::Uuid(report),
        Value::from(payload),
        Value::from(draft),
        Value::from(published),
    ];
    store
        .backend()
        .query_i64(&sql, &params)
        .await
        .expect("read the row")
        .expect("a count")
}

/// The README's program, then what it claims, checked on the row.
async fn the_story<B: Backend>(backend: B) {
    let reports = reports(backend).expect("the README's table is valid");
    let report = Uuid::new_v4();
    let built = build_report(report).await;

    // Provision, acquire, save through the macro, publish and release: applied.
    let published = rebuild(&reports, report).await.expect("rebuild");
    assert_eq!(published, Outcome::Applied);
    // The saved body is the published one, and the late save through the spent lease
    // changed nothing.
    assert_eq!(rows_with(&reports, report, &built, false, 1).await, 1);

    // A second worker while this one holds the report: refused, the row as it was.
    let held = reports
        .store
        .try_acquire(report, TTL)
        .await
        .expect("acquire")
        .expect("the report is free after the publication");
    let held = ReportLease(held);
    assert_eq!(
        rebuild(&reports, report).await.expect("rebuild"),
        Outcome::Refused
    );
    assert_eq!(rows_with(&reports, report, &built, false, 1).await, 1);

    // Control: the row check sees a save that applies, with the current lease.
    let outcome = reports.save(&held, "a draft", true).await.expect("save");
    assert_eq!(outcome, Outcome::Applied);
    assert_eq!(rows_with(&reports, report, &built, false, 1).await, 0);
    assert_eq!(rows_with(&reports, report, "a draft", true, 1).await, 1);

    // Once released, the same lease is stale: refused, and the row keeps the draft.
    let released = reports.store.release(&held).await.expect("release");
    assert_eq!(released, Outcome::Applied);
    let outcome = reports.save(&held, "stale", false).await.expect("save");
    assert_eq!(outcome, Outcome::Refused);
    assert_eq!(rows_with(&reports, report, "a draft", true, 1).await, 1);
}

/// The `rust` blocks of the README's guard and `#[fenced_write]` sections, each equal to
/// the text between its markers in `file`.
fn check_sync(readme: &str, file: &str) -> Result<usize, String> {
    let mut checked = 0;
    for (heading, marker, end) in [
        (
            "## The guard\n",
            "// ---- README: the guard ----\n",
            "// ---- end of the guard ----",
        ),
        (
            "## `#[fenced_write]`\n",
            "// ---- README: #[fenced_write] ----\n",
            "// ---- end of #[fenced_write] ----",
        ),
    ] {
        let section = readme
            .split_once(heading)
            .ok_or_else(|| format!("README.md has no `{}`", heading.trim_end()))?
            .1;
        let section = section.split("\n## ").next().unwrap_or(section);
        let block = section
            .split_once("```rust")
            .and_then(|(_, rest)| rest.split_once('\n'))
            .and_then(|(_, rest)| rest.split_once("```\n"))
            .ok_or_else(|| format!("`{}` has no rust block", heading.trim_end()))?
            .0;
        let marked = file
            .split_once(marker)
            .and_then(|(_, rest)| rest.split_once(end))
            .ok_or_else(|| format!("tests/readme.rs has no `{}`", marker.trim_end()))?
            .0;
        if block != marked {
            return Err(format!(
                "the README's `{}` example differs from tests/readme.rs",
                heading.trim_end()
            ));
        }
        checked += 1;
    }
    Ok(checked)
}

#[test]
fn readme_blocks_are_this_file() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("read README.md");
    let file = include_str!("readme.rs");
    assert_eq!(check_sync(&readme, file), Ok(2));

    // Negative controls: a README whose example changed by one character, and one
    // without the section, are both told apart.
    let changed = readme.replacen(".column(\"Payload\"", ".column(\"payload\"", 1);
    assert_ne!(changed, readme);
    assert!(check_sync(&changed, file).is_err());
    let missing = readme.replacen("## `#[fenced_write]`\n", "## Macro\n", 1);
    assert!(check_sync(&missing, file).is_err());
}

/// The README is one read: what fenced is and how to start. The rest has documents of
/// its own, and this keeps it from growing back.
const README_LINES: usize = 300;

#[test]
fn the_readme_stays_one_read() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("read README.md");
    let lines = readme.lines().count();
    assert!(
        lines <= README_LINES,
        "README.md has {lines} lines, more than {README_LINES}: move detail to a document of its own"
    );
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn the_readme_on_sqlite() {
    let dir = tempfile::tempdir().expect("temp dir");
    let backend = fenced::Sqlite::open(dir.path().join("reports.db"))
        .await
        .expect("open sqlite");
    let reports = reports(backend).expect("the README's table is valid");
    // The statement the README shows for PostgreSQL is the one `save_sql` renders.
    let sql = Reports::<fenced::Sqlite>::save_sql(reports.store.table(), fenced::Dialect::Postgres)
        .expect("render the statement");
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("read README.md");
    assert!(readme.contains(&format!("```text\n{sql}\n```")), "{sql}");
    the_story(reports.store.backend().clone()).await;
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn the_readme_on_postgres() {
    use fenced::{Executor, Postgres};

    let url = std::env::var("FENCED_PG_URL")
        .unwrap_or_else(|_| "host=127.0.0.1 port=5432 user=postgres dbname=test".to_owned());
    let admin = match Postgres::connect_with(&url, 1).await {
        Ok(admin) => admin,
        Err(error) => panic!(
            "PostgreSQL is not reachable at `{url}` ({error}). Start it, or point \
             FENCED_PG_URL at a server."
        ),
    };
    // A schema of its own, found through `search_path`, so that the README's unqualified
    // `ReportPublication` is this test's.
    let schema = format!("fenced_readme_{}", Uuid::new_v4().simple());
    admin
        .execute_batch(&format!("CREATE SCHEMA \"{schema}\""))
        .await
        .expect("create the test schema");
    let config = format!("{url} options='-c search_path={schema}'");
    let backend = Postgres::connect_with(&config, 2)
        .await
        .expect("connect to postgresql");
    the_story(backend).await;
    admin
        .execute_batch(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
        .await
        .expect("drop the test schema");
}

#[cfg(feature = "mssql")]
#[tokio::test]
async fn the_readme_on_sql_server() {
    use fenced::{Executor, Mssql, MssqlOptions};

    let Ok(url) = std::env::var("FENCED_MSSQL_URL") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but FENCED_MSSQL_URL is not: the README must run on SQL Server in CI"
        );
        eprintln!("the README on SQL Server did not run: FENCED_MSSQL_URL is not set");
        return;
    };
    // The README's unqualified names are the login's default schema's (`dbo`): dropped
    // before and after.
    async fn drop_tables(backend: &Mssql) {
        backend
            .execute_batch(
                "DROP TABLE IF EXISTS [ReportPublication]; DROP TABLE IF EXISTS [FencedEpoch]; \
                 DROP TABLE IF EXISTS [FencedOperation]",
            )
            .await
            .expect("drop the README's tables");
    }
    let options = MssqlOptions::default().max_connections(2);
    let backend = Mssql::connect_with_options(&url, options)
        .await
        .expect("connect to sql server");
    drop_tables(&backend).await;
    the_story(backend.clone()).await;
    drop_tables(&backend).await;
}
