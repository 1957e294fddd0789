//! The differential test of the lease-table path: the macro's checks of a fenced write's
//! SQL, against the real databases.
//!
//! A seeded generator writes caller `SET` and `WHERE` texts: values, nested
//! parentheses, operators, every quoting, comment and placeholder form of the three
//! dialects, and fragments that try to close the macro's parenthesis. Each text goes
//! through [`statement::check`], the macro's own check; every text it accepts is run
//! with a stale lease against real SQLite and real PostgreSQL, and must come back
//! `Refused` with every row unchanged.
//!
//! The same runs for a method that declares its one dialect (`dialect = "..."`): the
//! texts the checks accept for that dialect alone, each database's own forms included,
//! run on that database.
//!
//! Negative control: the same generator with the checks of the portable subset and of
//! the sent statement switched off, and the text read tolerantly rather than as each
//! database reads it (the macro as it was: one merged lexer), must produce texts that
//! escape the fence, i.e. apply with the stale lease.
//!
//! `FENCED_DIFF_SEED` replays a run (default: a fixed seed, printed);
//! `FENCED_DIFF_TEXTS` sets the accepted texts per dialect (default 10,000);
//! `FENCED_PG_URL` as for the other PostgreSQL tests. SQL Server runs the accepted texts
//! too when `FENCED_MSSQL_URL` is set (required when `CI` is set), on `dbo`'s tables,
//! named for this run (the declared name is unqualified, so it is the login's default
//! schema's), made before and dropped after.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use fenced_guard::{
    Backend, ColumnType, Dialect, Executor, FencedTable, Lease, Mssql, Outcome, Postgres, Sqlite,
    Store, Value,
};

use super::{Rng, macro_dialect, mssql_url, pg_url, say, seed, wanted};
use crate::statement::{self, Checks, Declared};

/// Fragments that some database reads differently from another, or that try to close
/// the macro's parenthesis, each as one operand-sized piece.
const SAFE_TEXT_VALUES: &[&str] = &[
    "'x'",
    "'it''s'",
    "''",
    "'a) OR (1 = 1'",
    "'-- not a comment'",
    "'/* not a comment */'",
    "'\"'",
    "'$$'",
    "'['",
    "'é'",
    "'@a'",
    "@a",
    "payload",
    "\"payload\"",
    "CONCAT(payload, 'x')",
    "COALESCE(payload, 'y')",
];

const TEXT_VALUES: &[&str] = &[
    "'a\\'",
    "'\\'' OR 1 = 1 OR payload = '",
    "E'x'",
    "E'\\') OR (1 = 1 OR \\''",
    "N'x'",
    "N'x'' OR 1 = 1 OR ''x'",
    "X'00'",
    "B'01'",
    "U&'x'",
    "$$x$$",
    "$$) OR (1 = 1 OR $$",
    "$t$) OR (1 = 1 OR $t$",
    "$1",
    "?",
    "?1",
    ":a",
    "$a",
    "#a",
    "@@SPID",
    "@a",
    "@a",
    "payload",
    "\"payload\"",
    "[payload]",
    "`payload`",
    "U&\"payload\"",
    "CONCAT(payload, 'x')",
    "COALESCE(payload, 'y')",
    "[a]]) OR (1 = 1 OR [b]",
    "`a``) OR (1 = 1 OR ``b`",
];

const SAFE_INT_VALUES: &[&str] = &[
    "1",
    "-2",
    "0",
    "15",
    "1.5e3",
    ".5",
    "@b",
    "n",
    "\"n\"",
    "(n + 1)",
    "n * 2",
    "n % 3",
    "CAST(@b AS BIGINT)",
    "COALESCE(n, 0)",
    "(SELECT 1)",
];

const INT_VALUES: &[&str] = &[
    "1",
    "-2",
    "0",
    "15",
    "1.5e3",
    ".5",
    "0x10",
    "1_000",
    "2x",
    "@b",
    "@b",
    "n",
    "\"n\"",
    "[n]",
    "`n`",
    "(n + 1)",
    "n * 2",
    "n % 3",
    "CAST(@b AS BIGINT)",
    "COALESCE(n, 0)",
    "(SELECT 1)",
    "$2",
    "?2",
    ":b",
    "n::bigint",
    "@@ROWCOUNT",
];

const HAZARDS: &[&str] = &[
    " -- note\n",
    " -- ) OR (1 = 1\n",
    " -- c\r) OR (1 = 1 OR (1 = 1\n",
    " /* note */ ",
    " /* ) OR (1 = 1 */ ",
    " /* /* */ ) OR (1 = 1 OR (1 = 1 /* */ */ ",
    " /* ",
    " */ ",
    "; ",
    "\nGO\n",
    ") OR (1 = 1",
    " OR 1 = 1 ",
    ")",
    "(",
    "\\",
    " ' ",
    " \" ",
    "\r",
    "\u{c}",
];

const TEXT_OPS: &[&str] = &["=", "<>", "!=", "<", ">=", "||", "==", "LIKE"];
const INT_OPS: &[&str] = &[
    "=", "<>", "!=", "<", ">", "<=", ">=", "=-", "!=-", "==", "<@",
];

struct Generator {
    rng: Rng,
}

impl Generator {
    fn hazard(&mut self, out: &mut String) {
        if self.rng.chance(2) {
            out.push_str(self.rng.pick(HAZARDS));
        } else if self.rng.chance(4) {
            out.push_str(self.rng.pick(&[" -- note\n", " /* note */ ", "\n", "\t"]));
        }
    }

    /// A plain operand mostly, one of every form sometimes.
    fn text_operand(&mut self) -> String {
        if self.rng.chance(12) {
            self.rng.pick(TEXT_VALUES).to_owned()
        } else {
            self.rng.pick(SAFE_TEXT_VALUES).to_owned()
        }
    }

    fn int_operand(&mut self) -> String {
        if self.rng.chance(12) {
            self.rng.pick(INT_VALUES).to_owned()
        } else {
            self.rng.pick(SAFE_INT_VALUES).to_owned()
        }
    }

    fn comparison(&mut self) -> String {
        let mut out = String::new();
        match self.rng.below(9) {
            0..=2 => {
                out.push_str(&self.text_operand());
                self.hazard(&mut out);
                out.push(' ');
                out.push_str(if self.rng.chance(10) {
                    self.rng.pick(TEXT_OPS)
                } else {
                    self.rng.pick(&["=", "<>", "!=", "<", ">="])
                });
                out.push(' ');
                out.push_str(&self.text_operand());
            }
            3..=5 => {
                out.push_str(&self.int_operand());
                self.hazard(&mut out);
                let op = if self.rng.chance(10) {
                    self.rng.pick(INT_OPS)
                } else {
                    self.rng
                        .pick(&["=", "<>", "!=", "<", ">", "<=", ">=", "=-"])
                };
                // Operators with and without spaces: PostgreSQL splits operator runs.
                if self.rng.chance(50) {
                    out.push(' ');
                    out.push_str(op);
                    out.push(' ');
                } else {
                    out.push_str(op);
                }
                out.push_str(&self.int_operand());
            }
            6 => out.push_str(self.rng.pick(&[
                "payload IS NULL",
                "n IS NOT NULL",
                "n BETWEEN 1 AND 5",
                "n IN (1, 2, @b)",
                "EXISTS (SELECT 1)",
                "1 = 1",
                "1 = 1",
            ])),
            7 => {
                out.push_str("NOT (");
                out.push_str(&self.comparison());
                out.push(')');
            }
            _ => out.push_str("1 = 1"),
        }
        self.hazard(&mut out);
        out
    }

    fn condition(&mut self, depth: usize) -> String {
        if depth > 3 || self.rng.chance(35) {
            return self.comparison();
        }
        match self.rng.below(4) {
            0 => format!(
                "{} OR {}",
                self.condition(depth + 1),
                self.condition(depth + 1)
            ),
            1 => format!(
                "{} AND {}",
                self.condition(depth + 1),
                self.condition(depth + 1)
            ),
            2 => {
                let parens = 1 + self.rng.below(3);
                format!(
                    "{}{}{}",
                    "(".repeat(parens),
                    self.condition(depth + 1),
                    ")".repeat(parens)
                )
            }
            _ => format!("1 = 1 OR {}", self.condition(depth + 1)),
        }
    }

    fn assignments(&mut self) -> String {
        let count = 1 + self.rng.below(2);
        let mut out = Vec::new();
        let mut taken: Vec<String> = Vec::new();
        for _ in 0..count {
            let column = if self.rng.chance(8) {
                self.rng.pick(&[
                    "[payload]",
                    "`n`",
                    "Generation",
                    "LeaseOwner",
                    "LeaseEpoch",
                    "PublishedGeneration",
                    "LeaseUntilUtc",
                    "ReportId",
                ])
            } else {
                self.rng.pick(&["payload", "n", "\"payload\"", "\"n\""])
            };
            let plain = column.trim_matches(|c| matches!(c, '"' | '[' | ']' | '`'));
            if taken.iter().any(|t| t.eq_ignore_ascii_case(plain)) {
                continue;
            }
            taken.push(plain.to_owned());
            let value = if plain == "n" {
                self.int_operand()
            } else if column.starts_with(|c: char| c.is_ascii_uppercase()) {
                "0".to_owned()
            } else {
                self.text_operand()
            };
            let mut text = format!("{column} = {value}");
            self.hazard(&mut text);
            out.push(text);
        }
        out.join(", ")
    }

    fn statement(&mut self) -> String {
        let set = self.assignments();
        let table = &names().table;
        // The caller's texts, before the macro checks them and appends the fence.
        if self.rng.chance(10) {
            format!("UPDATE {table} SET {set}")
        } else {
            format!("UPDATE {table} SET {set} WHERE {}", self.condition(0))
        }
    }
}

/// The tables' names in this run.
struct Names {
    table: String,
    epoch: String,
    operations: String,
}

/// SQL Server's tables are `dbo`'s, which another run of this test at the same time
/// would also make and drop: each run names its own.
fn names() -> &'static Names {
    static NAMES: OnceLock<Names> = OnceLock::new();
    NAMES.get_or_init(|| {
        let run = &uuid::Uuid::new_v4().simple().to_string()[..8];
        Names {
            table: format!("ReportPublication_{run}"),
            epoch: format!("FencedEpoch_{run}"),
            operations: format!("FencedOperation_{run}"),
        }
    })
}

fn declared(only: Option<Dialect>) -> Declared {
    Declared {
        table: names().table.clone(),
        key: "ReportId".into(),
        generation: "Generation".into(),
        owner: "LeaseOwner".into(),
        expiry: "LeaseUntilUtc".into(),
        published: "PublishedGeneration".into(),
        epoch: "LeaseEpoch".into(),
        publish_once: false,
        dialect: only.map(macro_dialect),
    }
}

fn table() -> FencedTable {
    let names = names();
    FencedTable::builder()
        .table(&names.table)
        .epoch_table(&names.epoch)
        .operations_table(&names.operations)
        .column("payload", ColumnType::Text)
        .column("n", ColumnType::BigInt)
        .build()
        .expect("a valid table")
}

/// A text the checks accepted: the guard's write for it and its values.
struct Accepted {
    text: String,
    write: &'static fenced_guard::__private::FencedWrite,
    values: Vec<Value>,
}

/// Runs the macro's check on `text`, for all three dialects or `only` one; the write
/// and values when it is accepted.
fn accept(text: &str, checks: Checks, only: Option<Dialect>) -> Option<Accepted> {
    let mut params = Vec::new();
    let mut values = Vec::new();
    for (name, value) in [("a", Value::from("x")), ("b", Value::I64(1))] {
        if text.contains(&format!("@{name}")) {
            params.push(name.to_owned());
            values.push(value);
        }
    }
    let declared = declared(only);
    let outcome = statement::check_with(text, &declared, "method", &params, checks);
    let checked = outcome.result.ok()?;
    if !outcome.unused.is_empty() {
        return None;
    }
    Some(Accepted {
        text: text.to_owned(),
        write: statement::write(&checked, &declared, "method", params.len()),
        values,
    })
}

fn texts(
    seed: u64,
    wanted: usize,
    checks: Checks,
    only: Option<Dialect>,
) -> (Vec<Accepted>, usize) {
    let mut generator = Generator { rng: Rng(seed) };
    let mut accepted = Vec::new();
    let mut generated = 0;
    while accepted.len() < wanted && generated < wanted * 40 {
        let text = generator.statement();
        generated += 1;
        if let Some(a) = accept(&text, checks, only) {
            accepted.push(a);
        }
    }
    (accepted, generated)
}

/// Four rows: the stale lease's (now held by its successor), one held by another
/// worker, one released, one never leased. Returns the stale lease and the keys.
async fn rows<B: Backend>(store: &Store<B>) -> (Lease, Vec<uuid::Uuid>) {
    let ttl = Duration::from_secs(600);
    let keys: Vec<uuid::Uuid> = (0..4).map(|_| uuid::Uuid::new_v4()).collect();
    let d = store.dialect();
    let t = store.table();
    for (i, key) in keys.iter().enumerate() {
        store.provision(*key).await.expect("provision");
        let sql = format!(
            "UPDATE {} SET payload = {}, n = {} WHERE {} = {}",
            t.name().quoted(d),
            d.placeholder(1),
            d.placeholder(2),
            t.key_column().quoted(d),
            d.placeholder(3)
        );
        let values = [
            Value::from(["x", "y", "it's", "a) OR (1 = 1"][i]),
            Value::I64(i as i64),
            Value::Uuid(*key),
        ];
        store
            .backend()
            .execute(&sql, &values)
            .await
            .expect("seed a row");
    }
    let stale = store.try_acquire(keys[0], ttl).await.unwrap().unwrap();
    let _ = store.release(&stale).await.expect("release");
    let _successor = store.try_acquire(keys[0], ttl).await.unwrap().unwrap();
    let _held = store.try_acquire(keys[1], ttl).await.unwrap().unwrap();
    let released = store.try_acquire(keys[2], ttl).await.unwrap().unwrap();
    let _ = store.release(&released).await.expect("release");
    (stale, keys)
}

async fn snapshot<B: Backend>(store: &Store<B>, keys: &[uuid::Uuid]) -> Vec<Vec<Value>> {
    let d = store.dialect();
    let t = store.table();
    let columns = [
        t.key_column(),
        t.generation_column(),
        t.owner_column(),
        t.expiry_column(),
        t.published_column(),
        t.epoch_column(),
    ]
    .map(|c| format!("CAST({} AS {})", c.quoted(d), text_type(d)))
    .join(", ");
    let mut out = Vec::new();
    for key in keys {
        let sql = format!(
            "SELECT {columns}, payload, n FROM {} WHERE {} = {}",
            t.name().quoted(d),
            t.key_column().quoted(d),
            d.placeholder(1)
        );
        let row = store.backend().query_row(&sql, &[Value::Uuid(*key)]).await;
        out.push(row.expect("read a row").expect("the row exists"));
    }
    out
}

fn text_type(d: Dialect) -> &'static str {
    match d {
        Dialect::Mssql => "nvarchar(max)",
        Dialect::Postgres | Dialect::Sqlite => "TEXT",
    }
}

/// What running the accepted texts found.
#[derive(Debug, Default)]
struct Tally {
    refused: usize,
    errors: usize,
    escapes: Vec<String>,
    first_errors: Vec<String>,
}

/// With the checks on: every text through the macro's runtime path
/// (`__private::execute`, which checks `FencedSql` again); with them off: the rendered
/// statement straight to the backend, as the macro used to send it.
async fn run<B: Backend>(store: &Store<B>, accepted: &[Accepted], checked: bool) -> Tally {
    let (stale, keys) = rows(store).await;
    let before = snapshot(store, &keys).await;
    let mut tally = Tally::default();
    for a in accepted {
        let outcome = if checked {
            fenced_guard::__private::execute(store, a.write, &stale, a.values.clone()).await
        } else {
            let sql = a
                .write
                .render_for(store.dialect(), store.table())
                .expect("rendered for every dialect");
            let mut values = a.values.clone();
            values.extend([
                Value::from(stale.key()),
                Value::I64(stale.generation()),
                Value::Uuid(stale.owner()),
            ]);
            store.backend().execute(&sql, &values).await.map(|rows| {
                if rows == 0 {
                    Outcome::Refused
                } else {
                    Outcome::Applied
                }
            })
        };
        match outcome {
            Ok(Outcome::Refused) => tally.refused += 1,
            Ok(Outcome::Applied) => tally.escapes.push(a.text.clone()),
            Err(e) => {
                tally.errors += 1;
                if tally.first_errors.len() < 8 {
                    tally.first_errors.push(format!("{}: {e}", a.text));
                }
            }
        }
    }
    if checked {
        assert_eq!(
            snapshot(store, &keys).await,
            before,
            "a row changed under a stale lease"
        );
    }
    tally
}

/// A PostgreSQL store in a schema of its own; the schema's name, to drop it.
async fn postgres_store() -> (Store<Postgres>, Postgres, String) {
    let url = pg_url();
    let admin = Postgres::connect_with(&url, 1)
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL is not reachable at `{url}`: {e}"));
    let name = format!("fenced_diff_{}", uuid::Uuid::new_v4().simple());
    admin
        .execute_batch(&format!("CREATE SCHEMA \"{name}\""))
        .await
        .expect("create the schema");
    let config = format!("{url} options='-c search_path={name}'");
    let backend = Postgres::connect_with(&config, 1)
        .await
        .expect("connect to postgresql");
    let store = Store::new(backend, table());
    store.create_schema().await.expect("create the tables");
    (store, admin, name)
}

/// SQL Server's store, on `dbo`'s tables of this run's names (the login's default
/// schema, which the macro's unqualified name resolves to), made anew; `None` without
/// `FENCED_MSSQL_URL`, a failure without it when `CI` is set.
async fn mssql_store() -> Option<Store<Mssql>> {
    let url = mssql_url()?;
    let backend = Mssql::connect_with(&url, 1)
        .await
        .unwrap_or_else(|e| panic!("SQL Server is not reachable with FENCED_MSSQL_URL: {e}"));
    drop_mssql_tables(&backend).await;
    let store = Store::new(backend, table());
    store.create_schema().await.expect("create the tables");
    Some(store)
}

async fn drop_mssql_tables(backend: &Mssql) {
    let names = names();
    let drops: Vec<String> = [&names.table, &names.epoch, &names.operations]
        .iter()
        .map(|name| format!("DROP TABLE IF EXISTS [{name}]"))
        .collect();
    backend
        .execute_batch(&drops.join("; "))
        .await
        .expect("drop the tables");
}

async fn sqlite_store(dir: &tempfile::TempDir, name: &str) -> Store<Sqlite> {
    let backend = Sqlite::open(dir.path().join(name))
        .await
        .expect("open sqlite");
    let store = Store::new(backend, table());
    store.create_schema().await.expect("create the tables");
    store
}

/// The counts of one run, said; the first escapes and errors, printed (shown when a test
/// fails, or with `--nocapture`).
fn report(label: &str, generated: usize, accepted: usize, tally: &Tally, took: Duration) {
    say(&format!(
        "{label}: {generated} generated, {accepted} accepted, {} refused, {} errors, {} escapes \
         ({:.1}s)",
        tally.refused,
        tally.errors,
        tally.escapes.len(),
        took.as_secs_f64()
    ));
    for e in tally.escapes.iter().take(3) {
        println!("  escape: {e:?}");
    }
    for e in &tally.first_errors {
        println!("  error: {e:?}");
    }
}

const DIALECTS: [Dialect; 3] = [Dialect::Sqlite, Dialect::Postgres, Dialect::Mssql];

/// Held by the SQL Server run of each test, which run in parallel.
static MSSQL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Runs `accepted` on a store of `dialect` made for this run, and drops it after;
/// `None` for SQL Server without `FENCED_MSSQL_URL`.
async fn run_on(
    dialect: Dialect,
    dir: &tempfile::TempDir,
    accepted: &[Accepted],
    checked: bool,
) -> Option<Tally> {
    Some(match dialect {
        Dialect::Sqlite => {
            let name = format!("{}.db", uuid::Uuid::new_v4().simple());
            run(&sqlite_store(dir, &name).await, accepted, checked).await
        }
        Dialect::Postgres => {
            let (store, admin, schema) = postgres_store().await;
            let tally = run(&store, accepted, checked).await;
            admin
                .execute_batch(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
                .await
                .expect("drop the schema");
            tally
        }
        Dialect::Mssql => {
            // One run at a time: every run makes and drops the same `dbo` tables.
            let _alone = MSSQL.lock().await;
            let store = mssql_store().await?;
            let tally = run(&store, accepted, checked).await;
            drop_mssql_tables(store.backend()).await;
            tally
        }
    })
}

/// Fails unless every run refused at least `wanted` texts, none applied, and at most
/// one in ten was a database error.
fn assert_refused(tallies: &[(Dialect, usize, Tally)], wanted: usize) {
    for (dialect, accepted, tally) in tallies {
        assert!(
            tally.escapes.is_empty(),
            "{dialect}: accepted texts applied with a stale lease: {:?}",
            tally.escapes
        );
        assert!(
            tally.refused >= wanted && tally.errors * 10 <= *accepted,
            "{dialect}: only {} of {accepted} accepted texts came back Refused ({} errors: {:?})",
            tally.refused,
            tally.errors,
            tally.first_errors
        );
    }
}

#[tokio::test(flavor = "current_thread")]
async fn accepted_texts_are_refused_with_a_stale_lease() {
    let seed = seed();
    let wanted = wanted();
    say(&format!(
        "FENCED_DIFF_SEED={seed} FENCED_DIFF_TEXTS={wanted}"
    ));
    let start = Instant::now();
    // A few more than wanted: a text the checks accept may still be an error on one
    // database (a type mismatch, a call with a bad argument): not applied, not counted.
    let (accepted, generated) = texts(seed, wanted + wanted / 10, Checks::ALL, None);
    say(&format!(
        "checks on: {generated} texts generated, {} accepted ({:.1}s)",
        accepted.len(),
        start.elapsed().as_secs_f64()
    ));
    assert!(accepted.len() >= wanted, "too few texts were accepted");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut tallies = Vec::new();
    for dialect in DIALECTS {
        let start = Instant::now();
        let Some(tally) = run_on(dialect, &dir, &accepted, true).await else {
            continue;
        };
        report(
            &format!("{dialect}, checks on"),
            generated,
            accepted.len(),
            &tally,
            start.elapsed(),
        );
        tallies.push((dialect, accepted.len(), tally));
    }
    assert_refused(&tallies, wanted);
}

/// A method that declares its one dialect: the texts the checks accept for that
/// dialect alone, run on that database with a stale lease.
#[tokio::test(flavor = "current_thread")]
async fn texts_for_one_dialect_are_refused_with_a_stale_lease() {
    let seed = seed();
    let wanted = wanted() / 5;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut tallies = Vec::new();
    for dialect in DIALECTS {
        let start = Instant::now();
        let (accepted, generated) = texts(seed, wanted + wanted / 10, Checks::ALL, Some(dialect));
        assert!(
            accepted.len() >= wanted,
            "{dialect}: too few texts were accepted"
        );
        // The texts only this dialect accepts: its own forms are exercised.
        let own = accepted
            .iter()
            .filter(|a| accept(&a.text, Checks::ALL, None).is_none())
            .count();
        assert!(
            own > 0,
            "{dialect}: no accepted text uses a form of its own"
        );
        let Some(tally) = run_on(dialect, &dir, &accepted, true).await else {
            continue;
        };
        report(
            &format!("{dialect} alone ({own} accepted texts in its own forms)"),
            generated,
            accepted.len(),
            &tally,
            start.elapsed(),
        );
        tallies.push((dialect, accepted.len(), tally));
    }
    assert_refused(&tallies, wanted);
}

/// The negative control: the generator finds escapes when the checks are off.
#[tokio::test(flavor = "current_thread")]
async fn without_the_checks_texts_escape_the_fence() {
    let seed = seed();
    let wanted = wanted() / 5;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let off = Checks {
        subset: false,
        sent: false,
        own_reading: false,
    };
    // The portable subset alone (the sent statement's check off), read tolerantly.
    let subset_only = Checks {
        subset: true,
        sent: false,
        own_reading: false,
    };
    let mut escapes = Vec::new();
    for (label, checks) in [("checks off", off), ("subset only", subset_only)] {
        let (accepted, generated) = texts(seed, wanted, checks, None);
        for dialect in DIALECTS {
            let start = Instant::now();
            let Some(tally) = run_on(dialect, &dir, &accepted, false).await else {
                continue;
            };
            report(
                &format!("{dialect}, {label}"),
                generated,
                accepted.len(),
                &tally,
                start.elapsed(),
            );
            escapes.push((label, dialect, tally.escapes));
        }
    }
    assert!(
        escapes
            .iter()
            .any(|(label, _, e)| *label == "checks off" && !e.is_empty()),
        "with the checks off, no generated text escaped the fence: the generator cannot find \
         what the checks are for"
    );
    for (label, dialect, found) in &escapes {
        if *label == "subset only" {
            assert!(
                found.is_empty(),
                "{dialect}: texts in the portable subset escaped the fence: {found:?}"
            );
        }
        // The escapes found with the checks off are each refused with them on.
        for text in found {
            assert!(
                accept(text, Checks::ALL, None).is_none(),
                "{dialect}: an escape is accepted by the checks: {text}"
            );
        }
    }
}
