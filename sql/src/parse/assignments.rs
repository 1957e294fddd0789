//! `SET` lists: the assignments of an update.

use super::{Assignment, Parser, SqlError};
use crate::expr::{ColumnRef, Operand};
use crate::lex::TokenKind;

impl Parser<'_, '_> {
    pub(super) fn assignments(&mut self) -> Result<Vec<Assignment>, SqlError> {
        let mut out = Vec::new();
        loop {
            // T-SQL `@var = col = expr` and `@var = expr`.
            if self.at_kind(TokenKind::Parameter)
                && self
                    .peek_at(1)
                    .is_some_and(|t| &self.text[t.range()] == "=")
            {
                self.pos += 2;
                let save = self.pos;
                if self.dotted_name().is_some()
                    && self.peek().is_some_and(|t| &self.text[t.range()] == "=")
                {
                    self.pos = save;
                } else {
                    self.pos = save;
                    let _ = self.operand();
                    if self.at_kind(TokenKind::Comma) {
                        self.pos += 1;
                        continue;
                    }
                    break;
                }
            }
            if self.at_kind(TokenKind::LParen) {
                // PostgreSQL `(a, b) = (x, y)` / `= (SELECT ...)`.
                let columns = self.column_list();
                let op = self
                    .peek()
                    .filter(|t| &self.text[t.range()] == "=")
                    .ok_or_else(|| self.error("expected `=`"))?;
                let column_range = op.range();
                self.pos += 1;
                let value = self.operand();
                for column in columns {
                    out.push(Assignment {
                        column,
                        column_range: column_range.clone(),
                        value: value.clone(),
                    });
                }
            } else {
                let name = self
                    .dotted_name()
                    .ok_or_else(|| self.error("expected a column in SET"))?;
                let column_range = name.range;
                if let Some(column) = name.qualifier.filter(|_| self.at_kind(TokenKind::LParen)) {
                    // T-SQL mutator methods: `SET Body.WRITE(@chunk, NULL, 0)`,
                    // `SET Doc.modify('...')`. The column is changed from its own value.
                    let column = column.into_owned();
                    let start = self.pos;
                    self.pos += 1;
                    let mut value = Operand::default();
                    self.call_arguments(&mut value);
                    value.range =
                        self.tokens[start].range().start..self.tokens[self.pos - 1].range().end;
                    value.columns.push(ColumnRef {
                        qualifier: None,
                        name: column.clone(),
                        range: column_range.clone(),
                    });
                    out.push(Assignment {
                        column,
                        column_range,
                        value,
                    });
                    if self.at_kind(TokenKind::Comma) {
                        self.pos += 1;
                        continue;
                    }
                    break;
                }
                let op = self
                    .peek()
                    .filter(|t| t.kind == TokenKind::Operator)
                    .ok_or_else(|| self.error("expected `=`"))?;
                let op_text = &self.text[op.range()];
                self.pos += 1;
                let mut value = self.operand();
                if op_text != "=" {
                    // `+=` and friends: the value is computed from the column itself.
                    value.columns.push(ColumnRef {
                        qualifier: None,
                        name: name.last.to_string(),
                        range: column_range.clone(),
                    });
                }
                out.push(Assignment {
                    column: name.last.to_string(),
                    column_range,
                    value,
                });
            }
            if self.at_kind(TokenKind::Comma) {
                self.pos += 1;
            } else {
                break;
            }
        }
        self.expect_boundary("expected `,` or the end of the SET list")?;
        Ok(out)
    }
}
