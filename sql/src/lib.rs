//! How fenced reads SQL: the one reading that the guard's run-time checks, the
//! `#[fenced_write]` macro and `fenced-lint` share.
//!
//! - [`lex`]: a lexer that never fails, for T-SQL, PostgreSQL and SQLite text at once.
//! - [`parse`]: a tolerant parser of the statements that write (`UPDATE`, `DELETE`,
//!   `MERGE`, `INSERT`, `TRUNCATE`) and of `GRANT`; [`analyse`] finds and parses every
//!   one of them in a text, and [`shape`] reads one statement for the macro.
//! - [`executed_strings`]: the string literals a text executes as SQL.

pub mod analyse;
mod dialect;
mod error;
mod executed;
pub mod expr;
pub mod lex;
mod name;
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
