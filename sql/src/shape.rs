//! The shape of one statement written with `@name` placeholders, with byte ranges into
//! the input: what the `#[fenced_write]` macro needs to check and rewrite a repository
//! method's SQL. It is produced by the same parser the lint's rules use.

use std::ops::Range;

use crate::Reading;
use crate::lex::{self as lexer, Token, TokenKind};
use crate::parse::{self, SqlError, StatementKind, TableName, Via};

/// A `@name` placeholder in the statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placeholder {
    /// The name without `@`.
    pub name: String,
    /// Byte range including `@`.
    pub range: Range<usize>,
}

/// One `column = value` of the `SET` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetShape {
    /// The column name, unquoted, without qualifier.
    pub column: String,
    /// Byte range of the column as written.
    pub column_range: Range<usize>,
    /// Byte range of the value expression.
    pub value_range: Range<usize>,
}

/// The shape of a single statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateShape {
    /// What kind of statement it is; `None` for anything but a write or grant.
    pub kind: Option<StatementKind>,
    /// The target table as written (with schema and quotes), when there is one.
    pub target: Option<(String, Range<usize>)>,
    /// The `SET` assignments (of an `UPDATE`, or of the first update arm).
    pub assignments: Vec<SetShape>,
    /// Every `@name` placeholder, in order.
    pub placeholders: Vec<Placeholder>,
    /// Byte range of the `WHERE` condition (after the keyword), if any.
    pub where_range: Option<Range<usize>>,
    /// Where fence predicates go: the end of the `WHERE` condition when there is one
    /// (append `AND ...` after parenthesising the caller's condition), otherwise the
    /// offset where a `WHERE` clause belongs: after `SET`, `OUTPUT` and `FROM`, before
    /// `RETURNING`, `OPTION`, `ORDER BY` or `LIMIT` (the end of the last token before it).
    pub where_insert_at: usize,
    /// Byte range of the whole statement (without a trailing `;`).
    pub range: Range<usize>,
    /// How the statement names its target: by its name, or (SQL Server) through an
    /// alias, a derived table or a common table expression.
    pub via: Via,
    /// The table an `OUTPUT ... INTO` writes.
    pub output_into: Option<TableName>,
    /// The keywords of statements inside this one: T-SQL's composable DML (`INSERT ...
    /// SELECT ... FROM (UPDATE ... OUTPUT ...) AS x`), PostgreSQL's data-modifying CTEs.
    pub nested: Vec<Range<usize>>,
}

/// Parses a single statement written with `@name` placeholders, in the tolerant
/// reading.
///
/// Errors carry a byte range into `sql`: unparseable SQL, no statement, or more than one.
pub fn parse_update(sql: &str) -> Result<UpdateShape, SqlError> {
    let lexed = lexer::lex(sql);
    parse_update_in(Reading::Tolerant, sql, &lexed.tokens)
}

/// [`parse_update`] as `reading` reads `sql`, over its `tokens` in that reading
/// ([`lexer::lex_caller`] for a `#[fenced_write]` text): which table it writes is
/// decided by that database's rules.
///
/// # Errors
///
/// As [`parse_update`].
pub fn parse_update_in(
    reading: Reading,
    sql: &str,
    tokens: &[Token],
) -> Result<UpdateShape, SqlError> {
    let placeholders = tokens
        .iter()
        .filter(|t| {
            t.kind == TokenKind::Parameter
                && sql[t.range()].starts_with('@')
                && !sql[t.range()].starts_with("@@")
        })
        .map(|t| Placeholder {
            name: sql[t.range().start + 1..t.range().end].to_owned(),
            range: t.range(),
        })
        .collect();
    let Some(first) = tokens.first() else {
        return Err(SqlError {
            message: "expected a SQL statement".to_owned(),
            range: 0..sql.len(),
        });
    };
    let found = parse::find_statements(sql, tokens);
    let Some(head) = found.iter().find(|f| f.first == 0) else {
        // Not a write: report its extent only.
        let last = tokens
            .iter()
            .rev()
            .find(|t| t.kind != TokenKind::Semicolon)
            .unwrap_or(first);
        return Ok(UpdateShape {
            kind: None,
            target: None,
            assignments: Vec::new(),
            placeholders,
            where_range: None,
            where_insert_at: last.range().end,
            range: first.range().start..last.range().end,
            via: Via::Name,
            output_into: None,
            nested: Vec::new(),
        });
    };
    let statement = parse::parse_found_in(reading, sql, tokens, head)?;
    // A statement inside another is always in parentheses (`FROM (UPDATE ...) AS x`,
    // `WITH w AS (DELETE ...)`); an upsert's or a MERGE's arm is not.
    let nested = found
        .iter()
        .filter(|f| f.first != head.first)
        .filter(|f| {
            let inside = tokens[head.first..f.keyword]
                .iter()
                .fold(0i32, |depth, t| match t.kind {
                    TokenKind::LParen => depth + 1,
                    TokenKind::RParen => depth - 1,
                    _ => depth,
                });
            inside > 0
        })
        .map(|f| tokens[f.keyword].range())
        .filter(|r| r.start >= statement.range.start && r.end <= statement.range.end)
        .collect();
    let rest = tokens
        .iter()
        .find(|t| t.range().start >= statement.range.end && t.kind != TokenKind::Semicolon);
    if let Some(extra) = rest {
        return Err(SqlError {
            message: "expected one statement; this continues after it".to_owned(),
            range: extra.range().start..sql.trim_end().len().max(extra.range().end),
        });
    }
    let arm = statement.updates.first();
    let where_range = arm.and_then(|arm| arm.where_range.clone());
    let where_insert_at = match &where_range {
        Some(range) => range.end,
        None => where_position(sql, tokens, &statement.range),
    };
    Ok(UpdateShape {
        kind: Some(statement.kind),
        target: statement
            .target
            .as_ref()
            .map(|t| (sql[t.range.clone()].to_owned(), t.range.clone())),
        assignments: arm
            .map(|arm| {
                arm.assignments
                    .iter()
                    .map(|a| SetShape {
                        column: a.column.clone(),
                        column_range: a.column_range.clone(),
                        value_range: a.value.range.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
        placeholders,
        where_range,
        where_insert_at,
        range: statement.range,
        via: statement.via,
        output_into: statement.output_into,
        nested,
    })
}

/// Where a `WHERE` clause belongs in a statement that has none.
fn where_position(sql: &str, tokens: &[Token], range: &Range<usize>) -> usize {
    let inside: Vec<&Token> = tokens
        .iter()
        .filter(|t| t.range().start >= range.start && t.range().end <= range.end)
        .collect();
    let mut depth = 0usize;
    let mut seen_set = false;
    let mut previous_end = range.end;
    for (i, token) in inside.iter().enumerate() {
        match token.kind {
            TokenKind::LParen => depth += 1,
            TokenKind::RParen => depth = depth.saturating_sub(1),
            TokenKind::Word if depth == 0 => {
                let word = &sql[token.range()];
                if word.eq_ignore_ascii_case("SET") {
                    seen_set = true;
                } else if seen_set
                    && ["RETURNING", "OPTION", "ORDER", "LIMIT"]
                        .iter()
                        .any(|w| word.eq_ignore_ascii_case(w))
                    && i > 0
                {
                    return previous_end;
                }
            }
            _ => {}
        }
        previous_end = token.range().end;
    }
    range.end
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Dialect;

    /// Every reading of every text, however broken, gives a shape or an error: never a
    /// panic. The texts are fragments of every reading's forms, in a seeded order.
    #[test]
    fn every_reading_of_any_text_ends() {
        const FRAGMENTS: &[&str] = &[
            "UPDATE ",
            "DELETE ",
            "INSERT INTO ",
            "MERGE ",
            "WITH c AS (",
            "SELECT ",
            "t ",
            "\"t\" ",
            "[t]]x] ",
            "`t` ",
            "U&\"\\0074\" ",
            "UESCAPE '!' ",
            "AS ",
            "a ",
            "SET ",
            "x = @p ",
            "FROM ",
            "USING ",
            "(",
            ")",
            ", ",
            ". ",
            "WHERE ",
            "1 = 1 ",
            "OUTPUT inserted.x INTO ",
            "ON CONFLICT DO UPDATE SET ",
            "'s' ",
            "$$b$$ ",
            "-- c\n",
            "/* c */ ",
            ";",
            "JOIN ",
            "ON ",
            "OR ",
            "AND ",
            "EXEC ",
            "é ",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut shaped = 0;
        for _ in 0..20_000 {
            let mut text = String::new();
            for _ in 0..12 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                text.push_str(FRAGMENTS[(seed % FRAGMENTS.len() as u64) as usize]);
            }
            for d in Dialect::ALL {
                if let Ok(lexed) = lexer::lex_caller(d, &text) {
                    shaped += usize::from(parse_update_in(d.into(), &text, &lexed.tokens).is_ok());
                }
            }
            let _ = parse_update(&text);
        }
        // Not vacuous: many texts are statements the readings shape.
        assert!(shaped > 1_000, "{shaped}");
    }

    #[test]
    fn shapes_an_update() {
        let sql = "UPDATE dbo.ReportPublication SET Payload = @payload, PublishedAtUtc = SYSUTCDATETIME() WHERE ReportId = @reportId";
        let shape = parse_update(sql).unwrap();
        assert_eq!(shape.kind, Some(StatementKind::Update));
        assert_eq!(
            shape.target.as_ref().map(|t| t.0.as_str()),
            Some("dbo.ReportPublication")
        );
        assert_eq!(shape.assignments.len(), 2);
        assert_eq!(
            &sql[shape.assignments[1].column_range.clone()],
            "PublishedAtUtc"
        );
        assert_eq!(
            &sql[shape.assignments[1].value_range.clone()],
            "SYSUTCDATETIME()"
        );
        assert_eq!(
            &sql[shape.where_range.clone().unwrap()],
            "ReportId = @reportId"
        );
        let names: Vec<_> = shape.placeholders.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["payload", "reportId"]);
    }

    #[test]
    fn no_where_and_errors() {
        let shape = parse_update("UPDATE t SET a = 1;").unwrap();
        assert_eq!(shape.where_range, None);
        assert_eq!(shape.where_insert_at, 18);
        let sql = "UPDATE t SET a = (1) FROM u RETURNING a";
        assert_eq!(
            &sql[..parse_update(sql).unwrap().where_insert_at],
            "UPDATE t SET a = (1) FROM u"
        );
        let sql = "UPDATE t SET a = 1 WHERE b = 2 OPTION (RECOMPILE)";
        assert_eq!(
            &sql[..parse_update(sql).unwrap().where_insert_at],
            "UPDATE t SET a = 1 WHERE b = 2"
        );
        let error = parse_update("UPDATE t WHERE a = 1").unwrap_err();
        assert_eq!(error.message, "expected SET");
        assert_eq!(error.range, 9..14);
        assert!(parse_update("UPDATE t SET a = 1; UPDATE u SET b = 2").is_err());
        assert!(parse_update("").is_err());
        assert!(parse_update("UPDATE t SET a = 1 WHERE").is_err());
    }
}
