//! The lexer's readings, one type each: the scanning loop is compiled once per reading,
//! so that what a reading fixes (which quotes a database knows, where its comments end)
//! is decided when the loop is compiled, never per byte.

use crate::Dialect;

/// A reading of SQL text: whose rules decide where each token ends.
pub(super) trait Mode {
    /// The database whose tokenizer is followed; `None` for the tolerant reading of
    /// all three at once.
    const DIALECT: Option<Dialect>;
    /// `@name` is a placeholder of a `#[fenced_write]` text, whatever the database.
    const CALLER: bool;
    /// The tolerant reading: it never fails, and it knows what clients and tools add
    /// to SQL files (`GO` lines, SQLCMD and psql lines, templates, `COPY` data).
    const TOLERANT: bool = Self::DIALECT.is_none();
    /// PostgreSQL's reading (`scan.l`).
    const POSTGRES: bool = matches!(Self::DIALECT, Some(Dialect::Postgres));
    /// SQLite's reading (`tokenize.c`).
    const SQLITE: bool = matches!(Self::DIALECT, Some(Dialect::Sqlite));
    /// SQL Server's reading.
    const MSSQL: bool = matches!(Self::DIALECT, Some(Dialect::Mssql));
}

/// The tolerant reading: T-SQL, PostgreSQL and SQLite at once.
pub(super) struct Tolerant;

impl Mode for Tolerant {
    const DIALECT: Option<Dialect> = None;
    const CALLER: bool = false;
}

/// PostgreSQL's reading; with `CALLER`, of a text with `@name` placeholders.
pub(super) struct Postgres<const CALLER: bool>;

impl<const C: bool> Mode for Postgres<C> {
    const DIALECT: Option<Dialect> = Some(Dialect::Postgres);
    const CALLER: bool = C;
}

/// SQLite's reading; with `CALLER`, of a text with `@name` placeholders.
pub(super) struct Sqlite<const CALLER: bool>;

impl<const C: bool> Mode for Sqlite<C> {
    const DIALECT: Option<Dialect> = Some(Dialect::Sqlite);
    const CALLER: bool = C;
}

/// SQL Server's reading; with `CALLER`, of a text with `@name` placeholders.
pub(super) struct Mssql<const CALLER: bool>;

impl<const C: bool> Mode for Mssql<C> {
    const DIALECT: Option<Dialect> = Some(Dialect::Mssql);
    const CALLER: bool = C;
}
