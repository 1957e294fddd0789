//! Property: a correct fenced statement is silent, and splicing any fence-stripping
//! mutation into it always yields a finding.

use std::path::Path;

use fenced_lint::{Config, Linter, Severity};
use proptest::prelude::*;

#[derive(Debug, Clone, Copy)]
enum Dialect {
    SqlServer,
    Postgres,
    Sqlite,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Operation {
    Publish,
    Renew,
    Release,
    Acquire,
}

struct Names {
    table: &'static str,
    key: &'static str,
    generation: &'static str,
    owner: &'static str,
    expiry: &'static str,
    epoch: &'static str,
    payload: &'static str,
}

impl Dialect {
    fn names(self) -> Names {
        match self {
            Dialect::SqlServer => Names {
                table: "dbo.ReportPublication",
                key: "ReportId",
                generation: "Generation",
                owner: "LeaseOwner",
                expiry: "LeaseUntilUtc",
                epoch: "LeaseEpoch",
                payload: "Payload",
            },
            Dialect::Postgres | Dialect::Sqlite => Names {
                table: "report_publication",
                key: "report_id",
                generation: "generation",
                owner: "lease_owner",
                expiry: "lease_until",
                epoch: "lease_epoch",
                payload: "payload",
            },
        }
    }

    fn clock(self) -> &'static str {
        match self {
            Dialect::SqlServer => "SYSUTCDATETIME()",
            Dialect::Postgres => "clock_timestamp()",
            Dialect::Sqlite => "CAST(unixepoch('subsec') * 1000 AS INTEGER)",
        }
    }

    /// The current recovery epoch, as the guard reads it (`guard/src/dialect`): on
    /// PostgreSQL stamped with the server's timeline.
    fn current_epoch(self) -> &'static str {
        match self {
            Dialect::SqlServer => "(SELECT [Epoch] FROM [dbo].[FencedEpoch] WHERE [Id] = 1)",
            Dialect::Postgres => {
                "(SELECT \"Epoch\" * 1000000 + ('x' || substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint FROM \"FencedEpoch\" WHERE \"Id\" = 1)"
            }
            Dialect::Sqlite => "(SELECT \"Epoch\" FROM \"FencedEpoch\" WHERE \"Id\" = 1)",
        }
    }

    fn param(self, name: &str, index: usize) -> String {
        match self {
            Dialect::SqlServer => format!("@{name}"),
            Dialect::Postgres => format!("${index}"),
            Dialect::Sqlite => format!("?{index}"),
        }
    }

    fn ttl(self) -> String {
        match self {
            Dialect::SqlServer => format!(
                "DATEADD(second, {}, {})",
                self.param("ttl", 9),
                self.clock()
            ),
            Dialect::Postgres => format!(
                "{} + {} * interval '1 second'",
                self.clock(),
                self.param("ttl", 9)
            ),
            Dialect::Sqlite => format!("{} + {}", self.clock(), self.param("ttl", 9)),
        }
    }
}

/// A predicate of the WHERE clause and what it is.
#[derive(Debug, Clone, PartialEq)]
enum Slot {
    Fence(String),
    Expiry(String),
    Free(String),
    Caller(String),
}

impl Slot {
    fn text(&self) -> &str {
        match self {
            Slot::Fence(s) | Slot::Expiry(s) | Slot::Free(s) | Slot::Caller(s) => s,
        }
    }
}

/// How the update is written.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Shape {
    /// `UPDATE ... SET ... WHERE ...`
    Update,
    /// `MERGE ... ON <conditions> WHEN MATCHED THEN UPDATE SET ...` (SQL Server)
    Merge,
    /// `INSERT ... ON CONFLICT (key) DO UPDATE SET ... WHERE ...` (PostgreSQL, SQLite):
    /// the conflict target stands for the key predicate.
    Upsert,
}

struct Statement {
    dialect: Dialect,
    shape: Shape,
    set: Vec<String>,
    slots: Vec<Slot>,
}

fn correct(dialect: Dialect, operation: Operation, caller: bool, alternate: bool) -> Statement {
    let shape = match (alternate, dialect) {
        (false, _) => Shape::Update,
        (true, Dialect::SqlServer) => Shape::Merge,
        (true, _) => Shape::Upsert,
    };
    let mut statement = correct_update(dialect, operation, caller);
    statement.shape = shape;
    if shape == Shape::Upsert {
        // The key predicate is the conflict target.
        statement.slots.remove(0);
    }
    statement
}

fn correct_update(dialect: Dialect, operation: Operation, caller: bool) -> Statement {
    let n = dialect.names();
    let p = |name: &str, i: usize| dialect.param(name, i);
    let key = Slot::Fence(format!("{} = {}", n.key, p("reportId", 1)));
    let generation = Slot::Fence(format!("{} = {}", n.generation, p("generation", 2)));
    let owner = Slot::Fence(format!("{} = {}", n.owner, p("owner", 3)));
    let unexpired = Slot::Expiry(format!("{} > {}", n.expiry, dialect.clock()));
    let epoch = Slot::Fence(format!("{} = {}", n.epoch, dialect.current_epoch()));
    let (set, mut slots) = match operation {
        Operation::Publish => (
            vec![format!("{} = {}", n.payload, p("payload", 4))],
            vec![key, generation, owner, unexpired, epoch],
        ),
        Operation::Renew => (
            vec![format!("{} = {}", n.expiry, dialect.ttl())],
            vec![key, generation, owner, unexpired, epoch],
        ),
        Operation::Release => (
            vec![
                format!("{} = NULL", n.owner),
                format!("{} = NULL", n.expiry),
            ],
            vec![key, generation, owner],
        ),
        Operation::Acquire => (
            vec![
                format!("{0} = {0} + 1", n.generation),
                format!("{} = {}", n.owner, p("owner", 3)),
                format!("{} = {}", n.expiry, dialect.ttl()),
            ],
            vec![
                key,
                Slot::Free(format!(
                    "({0} IS NULL OR {0} <= {1})",
                    n.expiry,
                    dialect.clock()
                )),
            ],
        ),
    };
    if caller {
        slots.push(Slot::Caller(format!(
            "({} IS NULL OR {} <> {})",
            n.payload,
            n.payload,
            p("payload", 4)
        )));
    }
    Statement {
        dialect,
        shape: Shape::Update,
        set,
        slots,
    }
}

impl Statement {
    fn sql(&self) -> String {
        let conditions: Vec<&str> = self.slots.iter().map(Slot::text).collect();
        let conditions = conditions.join("\n  AND ");
        let n = self.dialect.names();
        let set = self.set.join(",\n    ");
        match self.shape {
            Shape::Update => format!("UPDATE {}\nSET {set}\nWHERE {conditions};", n.table),
            Shape::Merge => format!(
                "MERGE {} AS t\nUSING (SELECT 1 AS one) AS s\nON {}\nWHEN MATCHED THEN UPDATE SET {set};",
                n.table,
                if conditions.is_empty() {
                    "1 = 1"
                } else {
                    &conditions
                }
            ),
            Shape::Upsert => format!(
                "INSERT INTO {table} AS t ({key}) VALUES ({p})\nON CONFLICT ({key}) DO UPDATE\nSET {set}{where_clause};",
                table = n.table,
                key = n.key,
                p = self.dialect.param("reportId", 1),
                where_clause = if conditions.is_empty() {
                    String::new()
                } else {
                    format!("\nWHERE {conditions}")
                }
            ),
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Mutation {
    DropFence(usize),
    FenceUnderOr(usize),
    FenceUnderNot(usize),
    TrailingOr,
    ClockToParameter,
    GenerationToParameter,
    DropFree,
    DropWhere,
}

/// Applies a mutation; `None` when it does not apply to this statement.
fn mutate(statement: &mut Statement, mutation: Mutation) -> Option<()> {
    let fences: Vec<usize> = statement
        .slots
        .iter()
        .enumerate()
        .filter(|(_, s)| matches!(s, Slot::Fence(_) | Slot::Expiry(_)))
        .map(|(i, _)| i)
        .collect();
    let d = statement.dialect;
    match mutation {
        Mutation::DropFence(i) => {
            let index = *fences.get(i % fences.len().max(1))?;
            statement.slots.remove(index);
        }
        Mutation::FenceUnderOr(i) => {
            let index = *fences.get(i % fences.len().max(1))?;
            let text = statement.slots[index].text().to_owned();
            statement.slots[index] =
                Slot::Caller(format!("({text} OR {} = 1)", d.param("force", 8)));
        }
        Mutation::FenceUnderNot(i) => {
            let index = *fences.get(i % fences.len().max(1))?;
            let text = statement.slots[index].text().to_owned();
            statement.slots[index] = Slot::Caller(format!("NOT ({text})"));
        }
        Mutation::TrailingOr => {
            let last = statement.slots.len().checked_sub(1)?;
            let text = statement.slots[last].text().to_owned();
            statement.slots[last] = Slot::Caller(format!("{text} OR {} = 1", d.param("force", 8)));
        }
        Mutation::ClockToParameter => {
            let index = statement
                .slots
                .iter()
                .position(|s| matches!(s, Slot::Expiry(_) | Slot::Free(_)))?;
            let text = statement.slots[index]
                .text()
                .replace(d.clock(), &d.param("now", 7));
            statement.slots[index] = Slot::Caller(text);
        }
        Mutation::GenerationToParameter => {
            let n = d.names();
            let index = statement
                .set
                .iter()
                .position(|s| s.starts_with(n.generation))?;
            statement.set[index] = format!("{} = {}", n.generation, d.param("generation", 2));
        }
        Mutation::DropFree => {
            let index = statement
                .slots
                .iter()
                .position(|s| matches!(s, Slot::Free(_)))?;
            statement.slots.remove(index);
        }
        Mutation::DropWhere => {
            statement.slots.clear();
            statement.slots.push(Slot::Caller("1 = 1".into()));
        }
    }
    Some(())
}

fn linter() -> &'static Linter {
    static LINTER: std::sync::LazyLock<Linter> = std::sync::LazyLock::new(build_linter);
    &LINTER
}

fn build_linter() -> Linter {
    Linter::new(
        &Config::from_toml(
            "[[table]]\nname = \"dbo.ReportPublication\"\nkey = \"ReportId\"\n\n[[table]]\nname = \"report_publication\"\nkey = \"report_id\"\ngeneration = \"generation\"\nowner = \"lease_owner\"\nexpiry = \"lease_until\"\nepoch = \"lease_epoch\"\n",
        )
        .unwrap(),
    )
}

/// Findings of error severity for the statement, checked as a `.sql` file and as a raw
/// string in a `.rs` file (both must agree).
fn errors(linter: &Linter, sql: &str) -> usize {
    let in_sql = linter.check_file(Path::new("q.sql"), sql.as_bytes());
    let rust = format!("fn q() {{\n    client.execute(r#\"{sql}\"#, &[]);\n}}\n");
    let in_rust = linter.check_file(Path::new("q.rs"), rust.as_bytes());
    let count = |r: &fenced_lint::FileReport| {
        r.diagnostics
            .iter()
            .filter(|d| d.severity() == Severity::Error)
            .count()
    };
    assert_eq!(count(&in_sql), count(&in_rust), "{sql}");
    count(&in_sql)
}

fn dialect() -> impl Strategy<Value = Dialect> {
    prop_oneof![
        Just(Dialect::SqlServer),
        Just(Dialect::Postgres),
        Just(Dialect::Sqlite)
    ]
}

fn operation() -> impl Strategy<Value = Operation> {
    prop_oneof![
        Just(Operation::Publish),
        Just(Operation::Renew),
        Just(Operation::Release),
        Just(Operation::Acquire)
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (0usize..8).prop_map(Mutation::DropFence),
        (0usize..8).prop_map(Mutation::FenceUnderOr),
        (0usize..8).prop_map(Mutation::FenceUnderNot),
        Just(Mutation::TrailingOr),
        Just(Mutation::ClockToParameter),
        Just(Mutation::GenerationToParameter),
        Just(Mutation::DropFree),
        Just(Mutation::DropWhere),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn correct_statements_are_silent(d in dialect(), op in operation(), caller in any::<bool>(), alternate in any::<bool>(), seed in any::<u64>()) {
        let mut statement = correct(d, op, caller, alternate);
        // The order of the conjuncts does not matter.
        let len = statement.slots.len();
        statement.slots.rotate_left((seed as usize) % len.max(1));
        let sql = statement.sql();
        prop_assert_eq!(errors(linter(), &sql), 0, "{}", sql);
    }

    #[test]
    fn stripping_the_fence_is_always_found(d in dialect(), op in operation(), caller in any::<bool>(), alternate in any::<bool>(), m in mutation()) {
        let mut statement = correct(d, op, caller, alternate);
        prop_assume!(mutate(&mut statement, m).is_some());
        let sql = statement.sql();
        prop_assert!(errors(linter(), &sql) > 0, "{:?} not found in\n{}", m, sql);
    }
}
