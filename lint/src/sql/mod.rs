//! SQL analysis: the tolerant lexer, the statement parser and the statement shape the
//! rules run on, from [`fenced_sql`], which the guard and the `#[fenced_write]` macro
//! read SQL with too.

pub use fenced_sql::lex as lexer;
pub use fenced_sql::{expr, parse, shape};

pub use fenced_sql::{
    Analysed, Assignment, ColumnRef, CompareOp, Grant, InsertPart, Operand, ParamStyle,
    Placeholder, Predicate, SetShape, SqlError, Statement, StatementKind, TableName, UpdateArm,
    UpdateShape, Via, analyse, analyse_lexed, analyse_tokens, executed_strings,
    executed_strings_lexed, parse_update,
};
