//! The parameters of a SQL Server statement as tiberius sends them, with every NULL
//! written into the statement as the keyword instead.
//!
//! tiberius sends a NULL string or byte string as an untyped NULL (TDS type `NULLTYPE`,
//! 0x1F): SQL Server accepts it, Babelfish refuses the whole call ("Data type 0x1F is
//! unknown"), and tiberius has no way to type it. The keyword `NULL` in the statement's
//! place of the parameter means the same to the server (a null the context types: the
//! column assigned, the value compared), on both. A statement with no NULL parameter is
//! sent unchanged, and with one it is read once by SQL Server's lexer, so that only
//! parameter tokens change, never text inside strings or comments; the parameters after
//! a NULL one are numbered again, since tiberius names them by position.

use std::borrow::Cow;
use std::fmt::Write;

use crate::dialect::Dialect;
use crate::dialect::lex::{self, TokenKind};
use crate::value::Value;

/// `sql` and its parameters as sent: unchanged without a NULL; otherwise each NULL
/// parameter's `@Pn` replaced by `NULL`, the others renumbered, and the NULLs left out.
pub(crate) fn inline_nulls<'a>(
    sql: &'a str,
    params: &'a [Value],
) -> (Cow<'a, str>, Vec<&'a dyn tiberius::ToSql>) {
    let all = || params.iter().map(|p| p as &dyn tiberius::ToSql).collect();
    if !params.iter().any(Value::is_null) {
        return (Cow::Borrowed(sql), all());
    }
    // A text SQL Server could not split fails there, with the server's own message.
    let Ok(lexed) = lex::lex(Dialect::Mssql, sql) else {
        return (Cow::Borrowed(sql), all());
    };
    let mut number = 0;
    let renumbered: Vec<Option<usize>> = params
        .iter()
        .map(|p| {
            (!p.is_null()).then(|| {
                number += 1;
                number
            })
        })
        .collect();
    let mut out = String::with_capacity(sql.len() + 16);
    let mut copied = 0;
    for token in lexed
        .tokens
        .iter()
        .filter(|t| t.kind == TokenKind::Parameter)
    {
        let Some(n) = position(&sql[token.range()]).filter(|n| *n <= params.len()) else {
            continue;
        };
        out.push_str(&sql[copied..token.range().start]);
        match renumbered[n - 1] {
            None => out.push_str("NULL"),
            Some(m) => {
                let _ = write!(out, "@P{m}");
            }
        }
        copied = token.range().end;
    }
    out.push_str(&sql[copied..]);
    let bound = params
        .iter()
        .filter(|p| !p.is_null())
        .map(|p| p as &dyn tiberius::ToSql)
        .collect();
    (Cow::Owned(out), bound)
}

/// The position `n` of a parameter token `@Pn` (a variable's name is matched without
/// regard to case, as SQL Server's default collation does).
fn position(token: &str) -> Option<usize> {
    let digits = token
        .strip_prefix("@P")
        .or_else(|| token.strip_prefix("@p"))?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.starts_with('0') {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(sql: &str, params: &[Value]) -> (String, usize) {
        let (sql, bound) = inline_nulls(sql, params);
        (sql.into_owned(), bound.len())
    }

    #[test]
    fn a_statement_without_a_null_is_sent_unchanged() {
        let params = [Value::I64(1), Value::from("x")];
        let (sql, bound) = inline_nulls("UPDATE t SET a = @P1 WHERE b = @P2", &params);
        assert!(matches!(sql, Cow::Borrowed(_)));
        assert_eq!(bound.len(), 2);
    }

    #[test]
    fn a_null_becomes_the_keyword_and_the_later_parameters_move_up() {
        let params = [Value::from("a"), Value::Null, Value::I64(3), Value::Null];
        assert_eq!(
            sent(
                "UPDATE t SET a = @P1, b = @P2 WHERE c = @P3 AND @p3 > 0 AND d = @P4 OR e = @P2",
                &params
            ),
            (
                "UPDATE t SET a = @P1, b = NULL WHERE c = @P2 AND @P2 > 0 AND d = NULL OR e = NULL"
                    .to_owned(),
                2
            )
        );
    }

    #[test]
    fn strings_comments_and_other_variables_are_left_alone() {
        let params = [Value::Null, Value::I64(2)];
        assert_eq!(
            sent(
                "DECLARE @P10 int, @fenced int; -- @P1\nSELECT N'@P1', @P2, @P10, @P01 /* @P2 */",
                &params
            ),
            (
                "DECLARE @P10 int, @fenced int; -- @P1\nSELECT N'@P1', @P1, @P10, @P01 /* @P2 */"
                    .to_owned(),
                1
            )
        );
    }

    #[test]
    fn every_null() {
        assert_eq!(
            sent("EXEC p @a = @P1, @b = @P2", &[Value::Null, Value::Null]),
            ("EXEC p @a = NULL, @b = NULL".to_owned(), 0)
        );
    }
}
