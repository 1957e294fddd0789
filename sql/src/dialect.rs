//! The databases whose reading of SQL fenced follows, and the tolerant reading of all
//! three at once.

use std::fmt;

/// A database: whose tokenizer splits a text, and whose rules decide which table a
/// statement writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// PostgreSQL.
    Postgres,
    /// SQLite.
    Sqlite,
    /// SQL Server.
    Mssql,
}

impl Dialect {
    /// The three, in this order.
    pub const ALL: [Dialect; 3] = [Dialect::Postgres, Dialect::Sqlite, Dialect::Mssql];

    /// The database's name: `PostgreSQL`, `SQLite`, `SQL Server`.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Postgres => "PostgreSQL",
            Dialect::Sqlite => "SQLite",
            Dialect::Mssql => "SQL Server",
        }
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whose rules a text is read by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reading {
    /// One database's, as its server reads the text.
    Dialect(Dialect),
    /// Any of the three's, for a text whose database is not known (the lint's): the
    /// lexer never fails, and where the databases disagree about what a statement
    /// writes, every table one of them would write counts, so that no write is missed.
    Tolerant,
}

impl From<Dialect> for Reading {
    fn from(dialect: Dialect) -> Reading {
        Reading::Dialect(dialect)
    }
}

impl Reading {
    /// The database, when the reading is one database's.
    pub fn dialect(self) -> Option<Dialect> {
        match self {
            Reading::Dialect(d) => Some(d),
            Reading::Tolerant => None,
        }
    }

    /// Whether `dialect`'s rules hold in this reading: they do in its own, and in the
    /// tolerant reading, which takes every database's.
    pub fn follows(self, dialect: Dialect) -> bool {
        self.dialect().is_none_or(|d| d == dialect)
    }
}
