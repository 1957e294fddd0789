//! Which database a statement is for: the one type the protocol's files, the table and
//! the errors share, kept apart from the statements themselves so that they can name it
//! without depending on the text of every database.

use std::fmt;

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
}
