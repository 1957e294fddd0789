//! The other-table differential's tables on each database: two fenced tables, each
//! with its epoch and operations tables, declared in one `fenced.toml`, and two plain
//! tables; their rows, a lease held on each fenced table, a recorded operation in each
//! operations table; and the oracle's reading of every protected table.
//!
//! The names are lower case, so that a bare name reaches its table on every database
//! (PostgreSQL folds bare names to lower case), and end in this run's id: SQL Server's
//! tables are `dbo`'s, which another run at the same time would make and drop too.

use std::sync::OnceLock;
use std::time::Duration;

use fenced_guard::{
    Backend, Declarations, Dialect, Executor, Lease, Lend, Mssql, OperationOutcome, Postgres,
    Sqlite, Store, Value,
};

use super::super::{mssql_url, pg_url};
use crate::declaration::Found;

/// The part a table plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
    /// The fenced table whose leases the transactions hold.
    Lease,
    LeaseEpoch,
    LeaseOperations,
    /// Another fenced table, declared beside the first.
    Second,
    SecondEpoch,
    SecondOperations,
    /// Tables no declaration names: what a fenced transaction writes.
    Line,
    Queue,
}

impl Role {
    pub(super) const ALL: [Role; 8] = [
        Role::Lease,
        Role::LeaseEpoch,
        Role::LeaseOperations,
        Role::Second,
        Role::SecondEpoch,
        Role::SecondOperations,
        Role::Line,
        Role::Queue,
    ];

    pub(super) const PROTECTED: [Role; 6] = [
        Role::Lease,
        Role::LeaseEpoch,
        Role::LeaseOperations,
        Role::Second,
        Role::SecondEpoch,
        Role::SecondOperations,
    ];

    pub(super) const PLAIN: [Role; 2] = [Role::Line, Role::Queue];

    pub(super) fn is_protected(self) -> bool {
        Role::PROTECTED.contains(&self)
    }
}

/// The tables' names in this run.
pub(super) struct Names {
    names: [String; 8],
}

impl Names {
    pub(super) fn of(&self, role: Role) -> &str {
        let i = Role::ALL.iter().position(|r| *r == role).unwrap_or(0);
        &self.names[i]
    }
}

/// PostgreSQL's longest name: the second fenced table's name is this long, so that a
/// longer name in a text, which PostgreSQL truncates, reaches it there.
pub(super) const POSTGRES_NAME_BYTES: usize = 63;

pub(super) fn names() -> &'static Names {
    static NAMES: OnceLock<Names> = OnceLock::new();
    NAMES.get_or_init(|| {
        let run = &uuid::Uuid::new_v4().simple().to_string()[..8];
        let mut second = format!("invoice_{run}_");
        while second.len() < POSTGRES_NAME_BYTES {
            second.push('x');
        }
        Names {
            names: [
                format!("report_{run}"),
                format!("report_epoch_{run}"),
                format!("report_operation_{run}"),
                second,
                format!("invoice_epoch_{run}"),
                format!("invoice_operation_{run}"),
                format!("report_line_{run}"),
                format!("queue_{run}"),
            ],
        }
    })
}

/// The application's `fenced.toml`: the two fenced tables, each with epoch and
/// operations tables of its own.
pub(super) fn declaration_text() -> String {
    let n = names();
    let table = |role: Role, key: &str, epoch: Role, operations: Role| {
        format!(
            "[[table]]\nname = \"{}\"\nkey = \"{key}\"\ngeneration = \"generation\"\n\
             owner = \"lease_owner\"\nexpiry = \"lease_until\"\n\
             published = \"published_generation\"\nepoch = \"lease_epoch\"\n\
             epoch_table = \"{}\"\noperations_table = \"{}\"\n\
             columns = [{{ name = \"payload\", type = \"text\" }}, {{ name = \"n\", type = \"bigint\" }}]\n",
            n.of(role),
            n.of(epoch),
            n.of(operations)
        )
    };
    format!(
        "{}\n{}",
        table(
            Role::Lease,
            "report_id",
            Role::LeaseEpoch,
            Role::LeaseOperations
        ),
        table(
            Role::Second,
            "invoice_id",
            Role::SecondEpoch,
            Role::SecondOperations
        )
    )
}

pub(super) fn declarations() -> Declarations {
    Declarations::from_toml(&declaration_text()).expect("the test's declarations")
}

/// The declarations as the macro reads them from a `fenced.toml`.
pub(super) fn found() -> Found {
    Found {
        path: "fenced.toml".into(),
        declarations: declarations(),
    }
}

/// How long the leases of the run last: longer than any run.
const TTL: Duration = Duration::from_secs(3600);

/// One database, ready: the lease's store, the lease the transactions hold, and the
/// query that reads every protected table.
pub(super) struct Prepared<B> {
    pub(super) store: Store<B>,
    pub(super) lease: Lease,
    /// The query that reads every protected table.
    reading: String,
}

/// Every row of every protected table, each value as text, sorted.
pub(super) type Snapshot = Vec<Vec<Option<String>>>;

impl<B: Backend + Lend + Clone> Prepared<B> {
    /// Makes the tables on `backend` (their schemas must not exist yet), and their rows.
    pub(super) async fn new(backend: B) -> Self {
        let d = backend.dialect();
        let declarations = declarations();
        let n = names();
        backend
            .execute_batch(&declarations.schema(d).expect("the declared schema"))
            .await
            .expect("create the fenced tables");
        let (bigint, text) = types(d);
        for role in Role::PLAIN {
            backend
                .execute_batch(&format!(
                    "CREATE TABLE {} (id {bigint} NULL, payload {text} NULL, n {bigint} NULL)",
                    n.of(role)
                ))
                .await
                .expect("create a plain table");
            for i in 1..=4 {
                backend
                    .execute(
                        &format!(
                            "INSERT INTO {} (id, payload, n) VALUES ({}, {}, {})",
                            n.of(role),
                            d.placeholder(1),
                            d.placeholder(2),
                            d.placeholder(3)
                        ),
                        &[Value::I64(i), Value::from("x"), Value::I64(i)],
                    )
                    .await
                    .expect("a plain row");
            }
        }
        let table = |role| declarations.table(n.of(role)).expect("a declared table");
        let store = Store::new(backend.clone(), table(Role::Lease));
        let second = Store::new(backend.clone(), table(Role::Second));
        let lease = rows(&store, 3).await;
        let _second_lease = rows(&second, 2).await;
        let prepared = Prepared {
            store,
            lease,
            reading: snapshot_query(&backend).await,
        };
        // What the oracle holds the texts to: every row above (three and two fenced
        // rows, an epoch row and an operation each).
        let rows = prepared.snapshot(&backend).await;
        assert_eq!(rows.len(), 9, "the protected tables' rows: {rows:?}");
        prepared
    }
}

impl<B> Prepared<B> {
    /// Every protected table, read on `executor` (the pool, or the transaction's own
    /// connection before it commits).
    pub(super) async fn snapshot(&self, executor: &impl Executor) -> Snapshot {
        let rows = executor
            .query_rows(&self.reading, &[])
            .await
            .expect("read the protected tables");
        let mut rows: Snapshot = rows
            .into_iter()
            .map(|row| {
                row.into_iter()
                    .map(|v| match v {
                        Value::Null => None,
                        Value::Text(t) => Some(t),
                        other => Some(format!("{other:?}")),
                    })
                    .collect()
            })
            .collect();
        rows.sort();
        rows
    }
}

/// Provisions `count` rows of `store`'s table, one of them leased (returned), one
/// leased and released, the others never; and records an operation under the lease in
/// a fenced transaction, so that the operations table has a row.
async fn rows<B: Backend + Lend>(store: &Store<B>, count: usize) -> Lease {
    let d = store.dialect();
    let t = store.table();
    let keys: Vec<uuid::Uuid> = (0..count).map(|_| uuid::Uuid::new_v4()).collect();
    for (i, key) in keys.iter().enumerate() {
        store.provision(*key).await.expect("provision");
        store
            .backend()
            .execute(
                &format!(
                    "UPDATE {} SET payload = {}, n = {} WHERE {} = {}",
                    t.name().quoted(d),
                    d.placeholder(1),
                    d.placeholder(2),
                    t.key_column().quoted(d),
                    d.placeholder(3)
                ),
                &[
                    Value::from(["x", "it's", "y"][i % 3]),
                    Value::I64(i as i64),
                    Value::Uuid(*key),
                ],
            )
            .await
            .expect("seed a fenced row");
    }
    if let Some(released) = keys.get(1) {
        let lease = store.try_acquire(*released, TTL).await.unwrap().unwrap();
        let _ = store.release(&lease).await.expect("release");
    }
    let lease = store.try_acquire(keys[0], TTL).await.unwrap().unwrap();
    let tx = store
        .transaction(&lease, Duration::from_secs(30))
        .await
        .expect("a fenced transaction")
        .expect("the lease holds");
    let recorded = tx
        .record(uuid::Uuid::new_v4())
        .await
        .expect("record an operation");
    assert_eq!(recorded, OperationOutcome::Applied);
    tx.commit().await.expect("commit");
    lease
}

/// The column types of the plain tables.
fn types(d: Dialect) -> (&'static str, &'static str) {
    match d {
        Dialect::Postgres => ("bigint", "text"),
        Dialect::Sqlite => ("INTEGER", "TEXT"),
        Dialect::Mssql => ("bigint", "nvarchar(max)"),
    }
}

/// One query for every row of every protected table: a row per table row, its table's
/// name first, then each column cast to text (timestamps too), padded with nulls to
/// the widest table. The columns are the catalog's, so none is left out.
async fn snapshot_query(executor: &impl Executor) -> String {
    let d = executor.dialect();
    let catalog = match d {
        Dialect::Postgres => {
            "SELECT column_name::text FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position"
        }
        Dialect::Sqlite => "SELECT name FROM pragma_table_info(?1) ORDER BY cid",
        Dialect::Mssql => {
            "SELECT CAST(name AS nvarchar(128)) FROM sys.columns \
             WHERE object_id = OBJECT_ID(@P1) ORDER BY column_id"
        }
    };
    let text = match d {
        Dialect::Postgres => "text",
        Dialect::Sqlite => "TEXT",
        Dialect::Mssql => "nvarchar(max)",
    };
    let quote = |name: &str| match d {
        Dialect::Mssql => format!("[{name}]"),
        Dialect::Postgres | Dialect::Sqlite => format!("\"{name}\""),
    };
    let mut tables = Vec::new();
    for role in Role::PROTECTED {
        let name = names().of(role);
        let columns: Vec<String> = executor
            .query_rows(catalog, &[Value::from(name)])
            .await
            .expect("read the catalog")
            .into_iter()
            .map(|row| match row.first() {
                Some(Value::Text(column)) => column.clone(),
                other => panic!("a column name, not {other:?}"),
            })
            .collect();
        assert!(columns.len() > 1, "{name}: no columns in the catalog");
        tables.push((name, columns));
    }
    let width = tables.iter().map(|(_, c)| c.len()).max().unwrap_or(0);
    tables
        .iter()
        .map(|(name, columns)| {
            let values: Vec<String> = (0..width)
                .map(|i| match columns.get(i) {
                    Some(c) => format!("CAST({} AS {text})", quote(c)),
                    None => format!("CAST(NULL AS {text})"),
                })
                .collect();
            format!(
                "SELECT CAST('{name}' AS {text}), {} FROM {}",
                values.join(", "),
                quote(name)
            )
        })
        .collect::<Vec<_>>()
        .join(" UNION ALL ")
}

/// A database of this run, made before and dropped after.
pub(super) enum Place {
    Sqlite(tempfile::TempDir),
    Postgres { admin: Postgres, database: String },
    Mssql(Mssql),
}

impl Place {
    /// A SQLite file of its own.
    pub(super) async fn sqlite() -> (Place, Sqlite) {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let backend = Sqlite::open(dir.path().join("other_table.db"))
            .await
            .expect("open sqlite");
        (Place::Sqlite(dir), backend)
    }

    /// A PostgreSQL database of its own, whose tables are in schema `dbo` (the search
    /// path), so that `dbo.name` reaches them as on SQL Server.
    pub(super) async fn postgres() -> (Place, Postgres) {
        let url = pg_url();
        let admin = Postgres::connect_with(&url, 1)
            .await
            .unwrap_or_else(|e| panic!("PostgreSQL is not reachable at `{url}`: {e}"));
        let database = format!("fenced_diff_{}", uuid::Uuid::new_v4().simple());
        admin
            .execute_batch(&format!("CREATE DATABASE \"{database}\""))
            .await
            .expect("create the database");
        let config = format!("{url} dbname={database} options='-c search_path=dbo'");
        let backend = Postgres::connect_with(&config, 2)
            .await
            .expect("connect to the database");
        backend
            .execute_batch("CREATE SCHEMA dbo")
            .await
            .expect("create schema dbo");
        (Place::Postgres { admin, database }, backend)
    }

    /// SQL Server's `dbo` tables of this run's names (the login's default schema);
    /// `None` without `FENCED_MSSQL_URL`.
    pub(super) async fn mssql() -> Option<(Place, Mssql)> {
        let url = mssql_url()?;
        let backend = Mssql::connect_with(&url, 2)
            .await
            .unwrap_or_else(|e| panic!("SQL Server is not reachable with FENCED_MSSQL_URL: {e}"));
        drop_mssql_tables(&backend).await;
        Some((Place::Mssql(backend.clone()), backend))
    }

    /// Drops what [`Place`]'s constructor made.
    pub(super) async fn remove(self) {
        match self {
            Place::Sqlite(dir) => drop(dir),
            Place::Postgres { admin, database } => admin
                .execute_batch(&format!("DROP DATABASE \"{database}\" WITH (FORCE)"))
                .await
                .expect("drop the database"),
            Place::Mssql(backend) => drop_mssql_tables(&backend).await,
        }
    }
}

async fn drop_mssql_tables(backend: &Mssql) {
    let drops: Vec<String> = Role::ALL
        .iter()
        .map(|role| format!("DROP TABLE IF EXISTS [{}]", names().of(*role)))
        .collect();
    backend
        .execute_batch(&drops.join("; "))
        .await
        .expect("drop the tables");
}
