//! The declaration of the fenced tables (`fenced.toml`): the table it builds is the
//! builder's, and the schema it prints creates the tables a store of that table works
//! on, on each database.

#![allow(missing_docs, unreachable_pub)]

#[allow(dead_code)]
mod support;

use fenced_guard::{ColumnType, Declarations, Dialect, Error, FencedTable, KeyType};

/// A table whose every name differs from the article's, as a PostgreSQL service writes
/// them; `{schema}` is replaced by the test's own schema.
const DECLARATION: &str = r#"
[[table]]
name = "{schema}jobs"
key = "job_id"
key_type = "text"
generation = "generation"
owner = "lease_owner"
expiry = "lease_until"
published = "published_generation"
published_at = "published_at"
epoch = "lease_epoch"
columns = [{ name = "payload", type = "text" }, { name = "attempts", type = "bigint" }]
"#;

fn declaration(schema: &str) -> Declarations {
    Declarations::from_toml(&DECLARATION.replace("{schema}", schema)).expect("declaration")
}

fn by_builder(name: &str) -> FencedTable {
    FencedTable::builder()
        .table(name)
        .key_column("job_id")
        .key_type(KeyType::Text)
        .generation_column("generation")
        .owner_column("lease_owner")
        .expiry_column("lease_until")
        .published_column("published_generation")
        .published_at_column("published_at")
        .epoch_column("lease_epoch")
        .column("payload", ColumnType::Text)
        .column("attempts", ColumnType::BigInt)
        .build()
        .expect("table")
}

#[test]
fn a_declared_table_is_the_table_the_builder_makes() {
    let declared = declaration("").table("jobs").expect("declared");
    assert_eq!(declared, by_builder("jobs"));
    // Names are found as the lint finds them, ignoring case; qualified or not.
    assert_eq!(declaration("").table("JOBS").expect("declared"), declared);
    assert_eq!(
        declaration("ops.").table("jobs").expect("declared"),
        by_builder("ops.jobs")
    );
    // The control: one name changed in the file is another table.
    let renamed = Declarations::from_toml(
        &DECLARATION
            .replace("{schema}", "")
            .replace("\"lease_owner\"", "\"owner\""),
    )
    .expect("declaration");
    assert_ne!(renamed.table("jobs").expect("declared"), declared);
}

#[test]
fn an_undeclared_or_unusable_table_is_a_clear_error() {
    let missing = declaration("").table("reports").expect_err("not declared");
    assert!(
        matches!(&missing, Error::Config(m) if m.contains("\"reports\" is not declared") && m.contains("declared: jobs")),
        "{missing}"
    );
    let epochless = Declarations::from_toml("[[table]]\nname = \"old\"\nepoch = false\n")
        .expect("the lint accepts it")
        .table("old")
        .expect_err("the guard cannot use it");
    assert!(
        matches!(&epochless, Error::Config(m) if m.contains("epoch = false")),
        "{epochless}"
    );
    let outside = Declarations::from_toml("[[table]]\nname = \"caf\u{e9}\"\n")
        .expect("the lint accepts it")
        .table("caf\u{e9}")
        .expect_err("outside the guard's grammar");
    assert!(
        matches!(outside, Error::InvalidIdentifier { .. }),
        "{outside}"
    );
    let bad = Declarations::from_toml("[[table]]\nname = \"jobs\"\nkey_type = \"int\"\n")
        .expect_err("no such key type");
    assert!(
        matches!(&bad, Error::Config(m) if m.contains("key_type")),
        "{bad}"
    );
    let file =
        Declarations::load(std::path::Path::new("/nonexistent/fenced.toml")).expect_err("no file");
    assert!(
        matches!(&file, Error::Config(m) if m.contains("/nonexistent/fenced.toml")),
        "{file}"
    );
}

#[test]
fn tables_sharing_protocol_tables_create_them_once() {
    let two = Declarations::from_toml(
        "[[table]]\nname = \"a\"\nkey = \"a_id\"\n[[table]]\nname = \"b\"\nkey = \"b_id\"\n",
    )
    .expect("declaration");
    let schema = two.schema(Dialect::Postgres).expect("schema");
    assert_eq!(
        schema.matches("CREATE TABLE IF NOT EXISTS \"a\"").count(),
        1
    );
    assert_eq!(
        schema.matches("CREATE TABLE IF NOT EXISTS \"b\"").count(),
        1
    );
    assert_eq!(
        schema
            .matches("CREATE TABLE IF NOT EXISTS \"FencedEpoch\"")
            .count(),
        1,
        "{schema}"
    );
    assert_eq!(schema.matches("INSERT INTO \"FencedEpoch\"").count(), 1);
}

/// Runs the printed schema on `backend`, then the protocol on the declared table: a
/// store of the declared table provisions, acquires and writes; a store of a table named
/// otherwise than the schema (the control) fails.
async fn the_schema_serves_the_declared_table<B>(backend: B, schema: &str, dialect: Dialect)
where
    B: fenced_guard::Backend + Clone,
{
    let declarations = declaration(schema);
    let ddl = declarations.schema(dialect).expect("schema");
    backend
        .execute_batch(&ddl)
        .await
        .expect("the printed schema runs");
    // Twice: a migration run again changes nothing.
    backend.execute_batch(&ddl).await.expect("and runs again");
    let store = fenced_guard::Store::new(backend.clone(), declarations.table("jobs").unwrap());
    assert!(store.provision("job-1").await.expect("provision"));
    let lease = store
        .try_acquire("job-1", std::time::Duration::from_secs(30))
        .await
        .expect("acquire")
        .expect("free");
    let outcome = store
        .update(
            &lease,
            &[("payload", "done".into()), ("attempts", 1i64.into())],
        )
        .await
        .expect("update");
    assert!(outcome.is_applied(), "{outcome:?}");
    let other = fenced_guard::Store::new(
        backend,
        FencedTable::builder()
            .table(format!("{schema}jobs"))
            .key_column("job_id")
            .key_type(KeyType::Text)
            .build()
            .unwrap(),
    );
    assert!(
        other.provision("job-2").await.is_err(),
        "the article's column names are not the declared table's"
    );
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn the_printed_schema_serves_the_declared_table_on_sqlite() {
    let db = support::sqlite::TempDatabase::new("declaration.db");
    let backend = fenced_guard::Sqlite::open(db.path()).await.expect("open");
    the_schema_serves_the_declared_table(backend, "", Dialect::Sqlite).await;
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn the_printed_schema_serves_the_declared_table_on_postgres() {
    use support::Place;
    let place = support::postgres::TestSchema::create("declaration_", 2).await;
    let backend = place.connect().await;
    let schema = place.qualified("");
    the_schema_serves_the_declared_table(backend, &schema, Dialect::Postgres).await;
    place.teardown().await;
}

#[cfg(feature = "mssql")]
#[tokio::test]
async fn the_printed_schema_serves_the_declared_table_on_sql_server() {
    use support::Place;
    let Some(place) = support::mssql::TestSchema::create("declaration_", 2).await else {
        return;
    };
    let backend = place.connect().await;
    let schema = place.qualified("");
    the_schema_serves_the_declared_table(backend, &schema, Dialect::Mssql).await;
    place.teardown().await;
}

/// Each declared table names every other, and their epoch and operations tables, as
/// tables its fenced transactions may not write; with one table declared, none.
#[test]
fn a_declared_table_protects_the_other_declared_tables() {
    let two = Declarations::from_toml(
        r#"
[[table]]
name = "jobs"
key = "job_id"
operations_table = "job_operations"

[[table]]
name = "reports"
key = "report_id"
epoch_table = "report_epoch"
operations_table = "report_operations"
"#,
    )
    .expect("declaration");
    let names = |table: &FencedTable| -> Vec<String> {
        table.protected_tables().map(ToString::to_string).collect()
    };
    let jobs = two.table("jobs").expect("jobs");
    assert_eq!(
        names(&jobs),
        [
            "jobs",
            "FencedEpoch",
            "job_operations",
            "reports",
            "report_epoch",
            "report_operations"
        ]
    );
    let reports = two.table("reports").expect("reports");
    assert_eq!(
        names(&reports),
        [
            "reports",
            "report_epoch",
            "report_operations",
            "jobs",
            "FencedEpoch",
            "job_operations"
        ]
    );
    assert_eq!(two.tables().expect("tables"), [jobs, reports]);
    // The control: declared alone, a table protects only its own.
    let alone = declaration("").table("jobs").expect("declared");
    assert_eq!(names(&alone).len(), 3);
}
