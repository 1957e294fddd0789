//! The protocol's statements as text, one rendering per database.
//!
//! Pure functions: nothing here talks to a database. Every statement uses numbered
//! placeholders (`$n` for PostgreSQL, `?n` for SQLite, `@Pn` for SQL Server), quotes
//! every identifier, and takes `now` from the database's clock
//! ([`Dialect::clock`]); the application's clock never decides whether a lease is valid.
//!
//! Parameter order, shared by all dialects:
//!
//! | statement | parameters |
//! |---|---|
//! | [`provision`] | 1 key |
//! | [`acquire`] | 1 key, 2 new owner, 3 ttl in milliseconds; returns the new generation |
//! | [`renew`] | 1 key, 2 generation, 3 owner, 4 ttl in milliseconds |
//! | [`release`] | 1 key, 2 generation, 3 owner |
//! | [`update`], [`publish`] | 1..=n the caller's values, n+1 key, n+2 generation, n+3 owner |
//!
//! The same convention, caller's parameters first and then key, generation and owner,
//! holds for [`FencedSql`] statements written with
//! [`fence_predicate`].

mod mssql;
mod postgres;
mod sqlite;

use std::fmt;

use crate::table::{FencedTable, Identifier};

/// The SQL dialects the guard speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// PostgreSQL: `$n` parameters, `"quoted"` identifiers, `clock_timestamp()`.
    Postgres,
    /// SQLite: `?n` parameters, `"quoted"` identifiers, integer milliseconds.
    Sqlite,
    /// SQL Server: `@Pn` parameters, `[quoted]` identifiers, `SYSUTCDATETIME()`.
    Mssql,
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Dialect::Postgres => "postgresql",
            Dialect::Sqlite => "sqlite",
            Dialect::Mssql => "sql server",
        })
    }
}

impl Dialect {
    /// The placeholder for the `n`-th parameter (1-based): `$n`, `?n` or `@Pn`.
    pub fn placeholder(self, n: usize) -> String {
        match self {
            Dialect::Postgres => format!("${n}"),
            Dialect::Sqlite => format!("?{n}"),
            Dialect::Mssql => format!("@P{n}"),
        }
    }

    /// The database's clock, in the expiry column's type: `clock_timestamp()` on
    /// PostgreSQL (never `now()`, which is the transaction's start), `SYSUTCDATETIME()`
    /// on SQL Server, and integer milliseconds since the Unix epoch on SQLite.
    pub fn clock(self) -> &'static str {
        match self {
            Dialect::Postgres => postgres::CLOCK,
            Dialect::Sqlite => sqlite::CLOCK,
            Dialect::Mssql => mssql::CLOCK,
        }
    }

    /// The expression `now + ttl`, the ttl in milliseconds bound as parameter `ttl`.
    fn expiry_after(self, ttl: usize) -> String {
        match self {
            Dialect::Postgres => postgres::expiry_after(ttl),
            Dialect::Sqlite => sqlite::expiry_after(ttl),
            Dialect::Mssql => mssql::expiry_after(ttl),
        }
    }
}

/// Convenience: an identifier quoted for `d`.
fn q(d: Dialect, id: &Identifier) -> String {
    id.quoted(d)
}

/// The fence, to append with `AND` to a write's top-level `WHERE`:
/// `key = p AND generation = p+1 AND owner = p+2 AND expiry > <clock>`, where `p` is
/// `first` (1-based) and the columns are the table's, quoted.
///
/// Bind the lease's key, generation and owner at `first`, `first + 1` and `first + 2`.
/// Parenthesise the caller's own `WHERE` before appending.
pub fn fence_predicate(dialect: Dialect, table: &FencedTable, first: usize) -> String {
    let p = |i| dialect.placeholder(first + i);
    format!(
        "{} = {} AND {} = {} AND {} = {} AND {} > {}",
        q(dialect, table.key_column()),
        p(0),
        q(dialect, table.generation_column()),
        p(1),
        q(dialect, table.owner_column()),
        p(2),
        q(dialect, table.expiry_column()),
        dialect.clock()
    )
}

/// The publish-once condition, appended with `AND` after [`fence_predicate`]:
/// `published < p`, where `p` is the generation's parameter, `first + 1`. Takes the
/// same `first` as [`fence_predicate`].
pub fn publish_once_predicate(dialect: Dialect, table: &FencedTable, first: usize) -> String {
    format!(
        "{} < {}",
        q(dialect, table.published_column()),
        dialect.placeholder(first + 1)
    )
}

/// The publish-once assignment, added to the `SET` list: `published = p`, where `p` is
/// the generation's parameter, `first + 1`. Takes the same `first` as
/// [`fence_predicate`].
pub fn publish_once_assignment(dialect: Dialect, table: &FencedTable, first: usize) -> String {
    format!(
        "{} = {}",
        q(dialect, table.published_column()),
        dialect.placeholder(first + 1)
    )
}

/// `CREATE TABLE` for the fenced table if it does not exist, with the protocol's columns
/// and the declared application columns (all nullable). The schema, if any, must exist.
pub fn create_schema(dialect: Dialect, table: &FencedTable) -> String {
    match dialect {
        Dialect::Postgres => postgres::create_table(table),
        Dialect::Sqlite => sqlite::create_table(table),
        Dialect::Mssql => mssql::create_table(table),
    }
}

/// Inserts the row for key `1` with generation 0 and published generation 0 if absent;
/// an existing row, and its generation, are left untouched.
pub fn provision(dialect: Dialect, table: &FencedTable) -> String {
    let columns = format!(
        "{}, {}, {}",
        q(dialect, table.key_column()),
        q(dialect, table.generation_column()),
        q(dialect, table.published_column())
    );
    let name = table.name().quoted(dialect);
    let key = dialect.placeholder(1);
    match dialect {
        Dialect::Postgres | Dialect::Sqlite => {
            format!("INSERT INTO {name} ({columns}) VALUES ({key}, 0, 0) ON CONFLICT DO NOTHING")
        }
        Dialect::Mssql => format!(
            "INSERT INTO {name} ({columns}) SELECT {key}, 0, 0 WHERE NOT EXISTS \
             (SELECT 1 FROM {name} WITH (UPDLOCK, HOLDLOCK) WHERE {} = {key})",
            q(dialect, table.key_column())
        ),
    }
}

/// Acquires the row: bumps the generation, installs the new owner and the expiry
/// `now + ttl`, only where the row is free (`expiry IS NULL OR expiry <= now`), and
/// returns the new generation (one row) or nothing (no row).
pub fn acquire(dialect: Dialect, table: &FencedTable) -> String {
    let gen_col = q(dialect, table.generation_column());
    let expiry = q(dialect, table.expiry_column());
    let set = format!(
        "{gen_col} = {gen_col} + 1, {} = {}, {expiry} = {}",
        q(dialect, table.owner_column()),
        dialect.placeholder(2),
        dialect.expiry_after(3)
    );
    let filter = format!(
        "{} = {} AND ({expiry} IS NULL OR {expiry} <= {})",
        q(dialect, table.key_column()),
        dialect.placeholder(1),
        dialect.clock()
    );
    let name = table.name().quoted(dialect);
    match dialect {
        Dialect::Postgres | Dialect::Sqlite => {
            format!("UPDATE {name} SET {set} WHERE {filter} RETURNING {gen_col}")
        }
        Dialect::Mssql => {
            format!("UPDATE {name} SET {set} OUTPUT inserted.{gen_col} WHERE {filter}")
        }
    }
}

/// Renews the lease: moves the expiry to `now + ttl` only while the lease still holds
/// (same key, generation and owner, and `expiry > now`), so a late renewal never revives.
pub fn renew(dialect: Dialect, table: &FencedTable) -> String {
    format!(
        "UPDATE {} SET {} = {} WHERE {}",
        table.name().quoted(dialect),
        q(dialect, table.expiry_column()),
        dialect.expiry_after(4),
        fence_predicate(dialect, table, 1)
    )
}

/// Releases the lease: clears owner and expiry where key, generation and owner still
/// match. No expiry check: a release after expiry but before any successor still frees
/// the row; after a successor it matches nothing.
pub fn release(dialect: Dialect, table: &FencedTable) -> String {
    format!(
        "UPDATE {} SET {} = NULL, {} = NULL WHERE {} = {} AND {} = {} AND {} = {}",
        table.name().quoted(dialect),
        q(dialect, table.owner_column()),
        q(dialect, table.expiry_column()),
        q(dialect, table.key_column()),
        dialect.placeholder(1),
        q(dialect, table.generation_column()),
        dialect.placeholder(2),
        q(dialect, table.owner_column()),
        dialect.placeholder(3)
    )
}

fn assignments(dialect: Dialect, columns: &[&Identifier]) -> Vec<String> {
    columns
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{} = {}", q(dialect, c), dialect.placeholder(i + 1)))
        .collect()
}

/// A fenced update of the caller's columns: `SET c1 = p1, ...` with the fence at
/// `n + 1`. `columns` must not be empty.
pub fn update(dialect: Dialect, table: &FencedTable, columns: &[&Identifier]) -> String {
    format!(
        "UPDATE {} SET {} WHERE {}",
        table.name().quoted(dialect),
        assignments(dialect, columns).join(", "),
        fence_predicate(dialect, table, columns.len() + 1)
    )
}

/// A publication: the caller's columns and `published = generation` (and the
/// published-at column, if any, set to the database's clock), fenced and only once per
/// generation (`published < generation`). With `release`, the same statement
/// also clears owner and expiry (publish-and-release).
pub fn publish(
    dialect: Dialect,
    table: &FencedTable,
    columns: &[&Identifier],
    release: bool,
) -> String {
    let first = columns.len() + 1;
    let mut set = assignments(dialect, columns);
    set.push(publish_once_assignment(dialect, table, first));
    if let Some(published_at) = table.published_at_column() {
        set.push(format!(
            "{} = {}",
            q(dialect, published_at),
            dialect.clock()
        ));
    }
    if release {
        set.push(format!("{} = NULL", q(dialect, table.owner_column())));
        set.push(format!("{} = NULL", q(dialect, table.expiry_column())));
    }
    format!(
        "UPDATE {} SET {} WHERE {} AND {}",
        table.name().quoted(dialect),
        set.join(", "),
        fence_predicate(dialect, table, first),
        publish_once_predicate(dialect, table, first)
    )
}

/// The protocol statements of one table in one dialect, rendered once.
#[derive(Clone, Debug)]
pub(crate) struct Statements {
    pub(crate) create_schema: String,
    pub(crate) provision: String,
    pub(crate) acquire: String,
    pub(crate) renew: String,
    pub(crate) release: String,
}

impl Statements {
    pub(crate) fn render(dialect: Dialect, table: &FencedTable) -> Self {
        Statements {
            create_schema: create_schema(dialect, table),
            provision: provision(dialect, table),
            acquire: acquire(dialect, table),
            renew: renew(dialect, table),
            release: release(dialect, table),
        }
    }
}

/// Caller SQL that already carries the fence, one text per dialect, for
/// [`Store::execute_fenced`](crate::Store::execute_fenced).
///
/// Convention: the caller's parameters are numbered `1..=n`, and the statement's
/// top-level `WHERE` ends with [`fence_predicate`] starting at `n + 1`; the guard
/// appends the lease's key, generation and owner as parameters `n + 1`, `n + 2`,
/// `n + 3`. For a publication, add [`publish_once_assignment`] and
/// [`publish_once_predicate`] with the same `first`, `n + 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FencedSql {
    postgres: &'static str,
    sqlite: &'static str,
    mssql: &'static str,
}

impl FencedSql {
    /// The statement's text for PostgreSQL, SQLite and SQL Server.
    pub const fn new(postgres: &'static str, sqlite: &'static str, mssql: &'static str) -> Self {
        FencedSql {
            postgres,
            sqlite,
            mssql,
        }
    }

    /// The text for `dialect`.
    pub fn for_dialect(&self, dialect: Dialect) -> &'static str {
        match dialect {
            Dialect::Postgres => self.postgres,
            Dialect::Sqlite => self.sqlite,
            Dialect::Mssql => self.mssql,
        }
    }
}
