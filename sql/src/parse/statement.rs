//! The parsed statement and its parts.

use std::ops::Range;

pub use crate::SqlError;
pub use crate::expr::TableName;
use crate::expr::{Operand, Predicate};
use crate::lex::{Token, TokenKind};
use crate::words::WordSet;

/// What kind of statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StatementKind {
    /// `UPDATE`.
    Update,
    /// `DELETE`.
    Delete,
    /// `MERGE`.
    Merge,
    /// `INSERT`, `REPLACE`.
    Insert,
    /// `GRANT`.
    Grant,
    /// `TRUNCATE`.
    Truncate,
}

/// `column = value` in a `SET` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// The column, unquoted, without qualifier.
    pub column: String,
    /// Byte range of the column as written (with qualifier).
    pub column_range: Range<usize>,
    /// The value.
    pub value: Operand,
}

/// An update: the `SET` list and the conditions the updated rows satisfy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateArm {
    /// The assignments.
    pub assignments: Vec<Assignment>,
    /// Conditions, all of which hold (the `WHERE`; for `MERGE`, the `ON` and the arm's
    /// `AND`; for `ON CONFLICT`, the `DO UPDATE ... WHERE`).
    pub conditions: Vec<Predicate>,
    /// Byte range of the `WHERE` condition, when there is one.
    pub where_range: Option<Range<usize>>,
    /// Columns known equal to a value by construction (the `ON CONFLICT (cols)` target).
    pub implied_equal: Vec<String>,
}

/// An insert: its column list and, when given as `VALUES`, its rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InsertPart {
    /// The column list, unquoted; empty when none was written.
    pub columns: Vec<String>,
    /// The `VALUES` rows, or `None` when the rows come from a query or procedure.
    pub rows: Option<Vec<Vec<Operand>>>,
    /// `INSERT OR REPLACE` / `REPLACE INTO`: an existing row is deleted first.
    pub replace: bool,
}

/// How a statement writes its parameters, so that advice can be written the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ParamStyle {
    /// `@name` (T-SQL), or T-SQL without parameters (`[brackets]`, `TOP`, `OUTPUT`...).
    At,
    /// `$1`, `$2` (PostgreSQL); holds the highest number used.
    Numbered(u32),
    /// `?` or `?1` (SQLite).
    Question,
    /// `:name`.
    Colon,
    /// No parameter and no dialect-specific syntax (a PL/pgSQL body using variables).
    #[default]
    Unknown,
}

/// Words only T-SQL has, among those statements use.
const TSQL_WORDS: WordSet = WordSet::new(&[
    "TOP",
    "OUTPUT",
    "SYSUTCDATETIME",
    "GETUTCDATE",
    "GETDATE",
    "NOLOCK",
]);

impl ParamStyle {
    /// The parameters and dialect hints among `tokens`.
    pub fn of(text: &str, tokens: &[Token]) -> ParamStyle {
        let mut numbered = None;
        let mut tsql = false;
        for t in tokens {
            let raw = match t.kind {
                TokenKind::Parameter | TokenKind::QuotedIdent => &text[t.range()],
                TokenKind::Word if TSQL_WORDS.contains(&text.as_bytes()[t.range()]) => {
                    tsql = true;
                    continue;
                }
                _ => continue,
            };
            match t.kind {
                TokenKind::Parameter if raw.starts_with("@@") => tsql = true,
                TokenKind::Parameter if raw.starts_with('@') => return ParamStyle::At,
                TokenKind::Parameter if raw.starts_with('?') => return ParamStyle::Question,
                TokenKind::Parameter if raw.starts_with(':') => return ParamStyle::Colon,
                TokenKind::Parameter if raw.starts_with('$') => {
                    let n = raw[1..].parse::<u32>().unwrap_or(0);
                    numbered = Some(numbered.unwrap_or(0).max(n));
                }
                TokenKind::QuotedIdent if raw.starts_with('[') => tsql = true,
                _ => {}
            }
        }
        match numbered {
            Some(n) => ParamStyle::Numbered(n),
            None if tsql => ParamStyle::At,
            None => ParamStyle::Unknown,
        }
    }

    /// The placeholder for the `index`-th (from 0) value a piece of advice adds, named
    /// `name`: `@name`, `$<next number>`, `?`, `:name` or `<name>`.
    pub fn placeholder(self, name: &str, index: u32) -> String {
        match self {
            ParamStyle::At => format!("@{name}"),
            ParamStyle::Numbered(n) => format!("${}", n + 1 + index),
            ParamStyle::Question => "?".to_owned(),
            ParamStyle::Colon => format!(":{name}"),
            ParamStyle::Unknown => format!("<{name}>"),
        }
    }
}

/// How a statement names the table it writes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Via {
    /// By its own name: `UPDATE t`, `INSERT INTO t`, `DELETE FROM t`, `MERGE INTO t`.
    #[default]
    Name,
    /// By an alias that the `FROM` list gives the table (SQL Server: `UPDATE a SET ...
    /// FROM t AS a`, `DELETE a FROM t AS a`); the range is the alias after the keyword.
    Alias(Range<usize>),
    /// By the alias of a derived table in the `FROM` list, written through to the table
    /// it selects from (SQL Server: `UPDATE a SET ... FROM (SELECT ... FROM t) AS a`).
    DerivedTable(Range<usize>),
    /// By the name of a common table expression, written through to the table it
    /// selects from (SQL Server: `WITH c AS (SELECT ... FROM t) UPDATE c SET ...`).
    Cte(Range<usize>),
}

/// One analysed statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    /// How its parameters are written (for advice).
    pub param_style: ParamStyle,
    /// What kind.
    pub kind: StatementKind,
    /// Byte range from the first keyword (`WITH` of a leading CTE, or the statement's
    /// keyword) to the last token.
    pub range: Range<usize>,
    /// The written target as the reading resolves it: SQL Server's `UPDATE alias ...
    /// FROM t alias` writes `t`, PostgreSQL's and SQLite's write the table `alias`
    /// ([`Via`]).
    pub target: Option<TableName>,
    /// How the statement names `target`.
    pub via: Via,
    /// In the tolerant reading, what another database makes the target where SQL
    /// Server's resolution through an alias, a derived table or a common table
    /// expression made `target` (`UPDATE x ... FROM t AS x` writes `t` on SQL Server
    /// and the table `x` on PostgreSQL and SQLite), so that no reading's write is
    /// missed. Empty in a database's own reading.
    pub alternatives: Vec<TableName>,
    /// The table an `OUTPUT ... INTO` clause inserts into (SQL Server): written too.
    pub output_into: Option<TableName>,
    /// The names the target is known by in conditions: its alias and its name.
    pub target_names: Vec<String>,
    /// Update arms (`UPDATE`, `MERGE ... THEN UPDATE`, `ON CONFLICT DO UPDATE`).
    pub updates: Vec<UpdateArm>,
    /// Deletes rows of the target (`DELETE`, `MERGE ... THEN DELETE`, `TRUNCATE`).
    pub deletes: bool,
    /// Insert parts (`INSERT`, `MERGE ... THEN INSERT`).
    pub inserts: Vec<InsertPart>,
    /// `GRANT`: what is granted on what.
    pub grant: Option<Grant>,
    /// Tables mentioned anywhere in the statement (targets, `FROM`, `USING`, subqueries).
    pub mentioned: Vec<TableName>,
}

/// What a `GRANT` gives.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Grant {
    /// The privileges, upper-cased (`UPDATE`, `ALL`, `PRIVILEGES`...).
    pub privileges: Vec<String>,
    /// The tables named (`ON t`, `ON TABLE t`, `ON OBJECT::t`).
    pub objects: Vec<TableName>,
    /// Schemas granted on as a whole (`ON SCHEMA::dbo`, `ON ALL TABLES IN SCHEMA public`).
    pub schemas: Vec<String>,
    /// No `ON` clause (T-SQL database-wide permission) or `ON DATABASE::x`.
    pub database: bool,
}
