//! Conditions: `WHERE` and the boolean expressions of `ON` and `AND`.

use std::ops::Range;

use super::{MAX_NESTING, Parser, SqlError};
use crate::expr::{CompareOp, Predicate};
use crate::lex::{TokenKind, is_any_word, is_word};
use crate::words::words;

impl Parser<'_, '_> {
    pub(super) fn where_clause(
        &mut self,
    ) -> Result<(Vec<Predicate>, Option<Range<usize>>), SqlError> {
        if !self.eat_word("WHERE") {
            return Ok((Vec::new(), None));
        }
        if self.at_word("CURRENT") && self.peek_at(1).is_some_and(|t| is_word(self.text, t, "OF")) {
            self.pos += 3;
            return Ok((Vec::new(), None));
        }
        let start = self
            .peek()
            .map(|t| t.range().start)
            .unwrap_or(self.text.len());
        let first = self.pos;
        let condition = self.condition()?;
        if self.pos == first {
            return Err(self.error("expected a condition after WHERE"));
        }
        // A condition that stops short of a clause or statement boundary was not
        // understood to its end: what follows may be a fence predicate, so the statement
        // is not analysed rather than analysed wrongly.
        self.expect_boundary("expected AND, OR or the end of the WHERE clause")?;
        let end = self.tokens[self.pos - 1].range().end;
        Ok((vec![condition], Some(start..end)))
    }

    /// `or_expr := and_expr (OR and_expr)*`
    pub(super) fn condition(&mut self) -> Result<Predicate, SqlError> {
        if self.nesting >= MAX_NESTING {
            return Err(self.error("conditions nested too deeply"));
        }
        self.nesting += 1;
        let result = self.disjunction();
        self.nesting -= 1;
        result
    }

    pub(super) fn disjunction(&mut self) -> Result<Predicate, SqlError> {
        let mut items = vec![self.conjunction()?];
        while self.eat_word("OR") {
            items.push(self.conjunction()?);
        }
        Ok(if items.len() == 1 {
            items.pop().unwrap_or(Predicate::Or(Vec::new()))
        } else {
            Predicate::Or(items)
        })
    }

    pub(super) fn conjunction(&mut self) -> Result<Predicate, SqlError> {
        let mut items = vec![self.negation()?];
        while self.eat_word("AND") {
            items.push(self.negation()?);
        }
        let mut flat = Vec::new();
        for item in items {
            match item {
                Predicate::And(inner) => flat.extend(inner),
                other => flat.push(other),
            }
        }
        Ok(if flat.len() == 1 {
            flat.pop().unwrap_or(Predicate::And(Vec::new()))
        } else {
            Predicate::And(flat)
        })
    }

    pub(super) fn negation(&mut self) -> Result<Predicate, SqlError> {
        if self.eat_word("NOT") {
            let mut count = 1;
            while self.eat_word("NOT") {
                count += 1;
            }
            let inner = self.predicate()?;
            return Ok(if count % 2 == 1 {
                Predicate::Not(Box::new(inner))
            } else {
                inner
            });
        }
        self.predicate()
    }

    pub(super) fn predicate(&mut self) -> Result<Predicate, SqlError> {
        if self.at_word("EXISTS") {
            self.pos += 1;
            self.skip_group();
            return Ok(Predicate::Other {
                operands: Vec::new(),
            });
        }
        if self.at_kind(TokenKind::LParen) && !self.paren_is_operand() {
            self.pos += 1;
            let inner = self.condition()?;
            if !self.at_kind(TokenKind::RParen) {
                return Err(self.error("expected `)`"));
            }
            self.pos += 1;
            return Ok(inner);
        }
        let left = self.operand();
        if left.range.is_empty() {
            return Err(self.error("expected an expression"));
        }
        let Some(next) = self.peek() else {
            return Ok(Predicate::Other {
                operands: vec![left],
            });
        };
        let next_text = &self.text[next.range()];
        let op = match next_text {
            "=" | "==" => Some(CompareOp::Eq),
            "<>" | "!=" => Some(CompareOp::NotEq),
            "<" | "!>" => Some(if next_text == "<" {
                CompareOp::Lt
            } else {
                CompareOp::LtEq
            }),
            "<=" => Some(CompareOp::LtEq),
            ">" | "!<" => Some(if next_text == ">" {
                CompareOp::Gt
            } else {
                CompareOp::GtEq
            }),
            ">=" => Some(CompareOp::GtEq),
            _ => None,
        };
        if let Some(op) = op {
            self.pos += 1;
            if self.at_word("ANY") || self.at_word("ALL") || self.at_word("SOME") {
                self.pos += 1;
                let right = self.operand();
                return Ok(Predicate::Other {
                    operands: vec![left, right],
                });
            }
            let right = self.operand();
            if right.range.is_empty() {
                return Err(self.error("expected an expression after the comparison"));
            }
            return Ok(Predicate::Compare { left, op, right });
        }
        if self.eat_word("IS") {
            let negated = self.eat_word("NOT");
            if self.eat_word("NULL") {
                return Ok(Predicate::IsNull {
                    operand: left,
                    negated,
                });
            }
            if self.eat_word("DISTINCT") {
                self.eat_word("FROM");
            }
            let right = self.operand();
            return Ok(Predicate::Other {
                operands: vec![left, right],
            });
        }
        let negated = self.eat_word("NOT");
        if self.eat_word("IN") {
            let right = self.operand();
            return Ok(Predicate::Other {
                operands: vec![left, right],
            });
        }
        if self.eat_word("BETWEEN") {
            let low = self.operand();
            if !self.eat_word("AND") {
                return Err(self.error("expected AND in BETWEEN"));
            }
            let high = self.operand();
            return Ok(Predicate::Other {
                operands: vec![left, low, high],
            });
        }
        if self.eat_word("LIKE")
            || self.eat_word("ILIKE")
            || self.eat_word("GLOB")
            || self.eat_word("SIMILAR")
            || self.eat_word("REGEXP")
        {
            self.eat_word("TO");
            let right = self.operand();
            if self.eat_word("ESCAPE") {
                let _ = self.operand();
            }
            return Ok(Predicate::Other {
                operands: vec![left, right],
            });
        }
        if negated {
            return Err(self.error("expected IN, BETWEEN or LIKE after NOT"));
        }
        Ok(Predicate::Other {
            operands: vec![left],
        })
    }

    /// At `(`: whether the group is a value (followed by an arithmetic or comparison
    /// operator, or a subquery) rather than a parenthesised condition.
    pub(super) fn paren_is_operand(&self) -> bool {
        if self
            .peek_at(1)
            .is_some_and(|t| is_any_word(self.text, t, words!["SELECT", "WITH", "VALUES"]))
        {
            return true;
        }
        let mut depth = 0usize;
        let mut j = self.pos;
        let mut has_boolean = false;
        while let Some(t) = self.tokens.get(j) {
            match t.kind {
                TokenKind::LParen => depth += 1,
                TokenKind::RParen => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                TokenKind::Semicolon | TokenKind::BatchSeparator => return false,
                TokenKind::Operator if depth == 1 => {
                    let op = &self.text[t.range()];
                    if matches!(op, "=" | "<>" | "!=" | "<" | "<=" | ">" | ">=") {
                        has_boolean = true;
                    }
                }
                TokenKind::Word
                    if depth == 1
                        && is_any_word(
                            self.text,
                            t,
                            words!["AND", "OR", "NOT", "IS", "IN", "LIKE", "BETWEEN", "EXISTS"],
                        ) =>
                {
                    has_boolean = true
                }
                _ => {}
            }
            j += 1;
        }
        let after = self.tokens.get(j + 1);
        let followed_by_operator = after.is_some_and(|t| {
            t.kind == TokenKind::Operator && !matches!(&self.text[t.range()], "&&")
        }) || after.is_some_and(|t| {
            is_any_word(self.text, t, words!["IS", "IN", "LIKE", "BETWEEN", "NOT"])
                && !is_word(self.text, t, "NOT")
        });
        followed_by_operator || !has_boolean
    }
}
