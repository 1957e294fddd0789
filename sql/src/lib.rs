//! How fenced reads SQL: the one reading that the guard's run-time checks, the
//! `#[fenced_write]` macro and `fenced-lint` share.
//!
//! - [`lex`]: one lexer with a reading per [`Dialect`], following each database's own
//!   tokenizer and refusing what it cannot split ([`lex::lex_as`], and
//!   [`lex::lex_caller`] for `#[fenced_write]` texts), and the tolerant reading of all
//!   three at once, which never fails ([`lex::lex`]).
//! - [`parse`]: the statements that write (`UPDATE`, `DELETE`, `MERGE`, `INSERT`,
//!   `TRUNCATE`) and `GRANT`, parsed in a [`Reading`]: which table a statement writes is
//!   decided by that database's rules ([`Statement::target`], [`Via`]), and in the
//!   tolerant reading by every database's ([`Statement::alternatives`]).
//!   [`analyse()`] finds and parses every one of them in a text, and [`shape`] reads one
//!   statement for the macro.
//! - [`portable`]: the forms PostgreSQL, SQLite and SQL Server read alike.
//! - [`executed_strings`]: the string literals a text executes as SQL.

pub mod analyse;
mod dialect;
mod error;
mod executed;
pub mod expr;
pub mod lex;
pub mod parse;
pub mod portable;
pub mod shape;
mod words;

pub use analyse::{Analysed, analyse, analyse_lexed, analyse_tokens};
pub use dialect::{Dialect, Reading};
pub use error::SqlError;
pub use executed::{executed_strings, executed_strings_lexed};
pub use expr::{ColumnRef, CompareOp, Operand, Predicate};
pub use parse::{
    Assignment, Grant, InsertPart, ParamStyle, Statement, StatementKind, TableName, UpdateArm, Via,
};
pub use shape::{Placeholder, SetShape, UpdateShape, parse_update, parse_update_in};
