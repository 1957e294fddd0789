//! `INSERT`, `REPLACE`, and the upserts `ON CONFLICT` and `ON DUPLICATE KEY`.

use super::{
    InsertPart, ParamStyle, Parser, STOP_WORDS, SqlError, Statement, StatementKind, UpdateArm, Via,
    is_name, tables_in,
};
use crate::expr::Operand;
use crate::lex::{TokenKind, ident_text, is_any_word};
use crate::words::words;

impl Parser<'_, '_> {
    pub(super) fn insert(&mut self) -> Result<Statement, SqlError> {
        let mut replace = self.at_word("REPLACE");
        self.pos += 1; // INSERT / REPLACE
        if self.eat_word("OR") {
            replace |= self.at_word("REPLACE");
            self.pos += 1;
        }
        self.skip_top();
        self.eat_word("INTO");
        let target = self
            .table_name()
            .ok_or_else(|| self.error("expected the table after INSERT"))?;
        let alias = self.alias();
        // A target read through a CTE is resolved after parsing.
        let wanted = match self.wanted {
            Some(wanted) if self.ctes.is_empty() => Some(wanted(&target)),
            _ => None,
        };
        self.lean = wanted.is_some_and(|generation| generation.is_none());
        self.generation = wanted.flatten();
        if self.lean {
            // An INSERT writes its target and nothing else: past a target the caller
            // does not want, there is nothing to look at.
            return Ok(Statement {
                param_style: ParamStyle::Unknown,
                kind: StatementKind::Insert,
                range: 0..0,
                target: Some(target),
                via: Via::Name,
                alternatives: Vec::new(),
                output_into: None,
                target_names: Vec::new(),
                updates: Vec::new(),
                deletes: replace,
                inserts: Vec::new(),
                grant: None,
                mentioned: Vec::new(),
            });
        }
        let mut mentioned = Vec::new();
        let start = self.pos;
        let part = self.insert_body(replace)?;
        // The rules read no insert's mentions; only the public analysis keeps them.
        if !self.lean && wanted.is_none() {
            mentioned.push(target.clone());
            mentioned.extend(tables_in(self.text, &self.tokens[start..self.pos]));
        }
        let mut updates = Vec::new();
        if self.eat_word("ON") {
            if self.eat_word("CONFLICT") {
                let mut implied = Vec::new();
                if self.at_kind(TokenKind::LParen) {
                    implied = self.column_list();
                } else if self.eat_word("ON") {
                    self.eat_word("CONSTRAINT");
                    self.pos += 1;
                }
                if self.at_word("WHERE") {
                    let _ = self.where_clause()?;
                }
                if !self.eat_word("DO") {
                    return Err(self.error("expected DO"));
                }
                if self.eat_word("UPDATE") {
                    if !self.eat_word("SET") {
                        return Err(self.error("expected SET"));
                    }
                    let assignments = self.assignments()?;
                    let (conditions, where_range) = self.where_clause()?;
                    updates.push(UpdateArm {
                        assignments,
                        conditions,
                        where_range,
                        implied_equal: implied,
                    });
                } else {
                    self.eat_word("NOTHING");
                }
            } else if self.eat_word("DUPLICATE") {
                self.eat_word("KEY");
                self.eat_word("UPDATE");
                let assignments = self.assignments()?;
                updates.push(UpdateArm {
                    assignments,
                    conditions: Vec::new(),
                    where_range: None,
                    implied_equal: Vec::new(),
                });
            }
        }
        self.tail();
        // The names the target goes by qualify the columns of an upsert's arms.
        let mut names = Vec::new();
        if !self.lean && (wanted.is_none() || !updates.is_empty()) {
            names.push(target.name.clone());
            names.extend(alias);
        }
        Ok(Statement {
            param_style: ParamStyle::Unknown,
            kind: StatementKind::Insert,
            range: 0..0,
            target: Some(target),
            via: Via::Name,
            alternatives: Vec::new(),
            output_into: None,
            target_names: names,
            updates,
            deletes: replace,
            inserts: vec![part],
            grant: None,
            mentioned,
        })
    }

    /// After the target of an INSERT (or `THEN INSERT` in MERGE): column list and source.
    pub(super) fn insert_body(&mut self, replace: bool) -> Result<InsertPart, SqlError> {
        let columns = if !self.at_kind(TokenKind::LParen) {
            Vec::new()
        } else if self.lean {
            self.skip_group();
            Vec::new()
        } else {
            self.column_list()
        };
        // Only the generation column's values are examined, and only a positional
        // insert's rows are counted: other values are skipped, not parsed.
        let skip_values = self.lean
            || !columns.is_empty()
                && self
                    .generation
                    .is_some_and(|g| !columns.iter().any(|c| c.eq_ignore_ascii_case(g)));
        if self.eat_word("OUTPUT") {
            self.skip_output();
        }
        let rows = if self.eat_word("VALUES") {
            let mut rows = Vec::new();
            while self.at_kind(TokenKind::LParen) {
                if skip_values {
                    if !self.skip_group() {
                        return Err(self.error("expected `)` after VALUES row"));
                    }
                    if self.at_kind(TokenKind::Comma) {
                        self.pos += 1;
                        continue;
                    }
                    break;
                }
                self.pos += 1;
                let mut row = Vec::new();
                loop {
                    row.push(self.operand());
                    if self.at_kind(TokenKind::Comma) {
                        self.pos += 1;
                    } else {
                        break;
                    }
                }
                if !self.at_kind(TokenKind::RParen) {
                    return Err(self.error("expected `)` after VALUES row"));
                }
                self.pos += 1;
                rows.push(row);
                if self.at_kind(TokenKind::Comma) {
                    self.pos += 1;
                } else {
                    break;
                }
            }
            Some(rows)
        } else if self.eat_word("DEFAULT") {
            self.eat_word("VALUES");
            Some(vec![Vec::new()])
        } else {
            // INSERT ... SELECT / EXEC / WITH: the select list of a single plain SELECT
            // is read as the row (`SELECT @id, 0, 0 WHERE NOT EXISTS (...)`), then the
            // query is skipped up to ON CONFLICT or the end.
            let mut row = if self.eat_word("SELECT") && !skip_values {
                self.select_list()
            } else {
                None
            };
            self.eat_word("WITH");
            self.eat_word("EXEC");
            self.eat_word("EXECUTE");
            loop {
                self.skip_clause();
                if self.at_word("ON")
                    && self
                        .peek_at(1)
                        .is_some_and(|t| is_any_word(self.text, t, words!["CONFLICT", "DUPLICATE"]))
                {
                    break;
                }
                if self.at_boundary()
                    && self.peek().is_some_and(|t| {
                        is_any_word(
                            self.text,
                            t,
                            words![
                                "FROM",
                                "WHERE",
                                "GROUP",
                                "HAVING",
                                "ORDER",
                                "LIMIT",
                                "UNION",
                                "EXCEPT",
                                "INTERSECT",
                                "ON",
                                "SELECT",
                                "OFFSET",
                                "WINDOW",
                                "INTO",
                            ],
                        )
                    })
                {
                    if self.peek().is_some_and(|t| {
                        is_any_word(
                            self.text,
                            t,
                            words!["UNION", "EXCEPT", "INTERSECT", "SELECT"],
                        )
                    }) {
                        row = None; // more than one row, or not a plain SELECT
                    }
                    self.pos += 1;
                    continue;
                }
                break;
            }
            row.map(|row| vec![row])
        };
        Ok(InsertPart {
            columns,
            rows,
            replace,
        })
    }

    /// After `SELECT`: the items of the select list, or `None` when it is not a plain
    /// list of expressions (`*`, `DISTINCT`, `TOP`).
    pub(super) fn select_list(&mut self) -> Option<Vec<Operand>> {
        if self.at_word("DISTINCT") || self.at_word("TOP") || self.at_word("ALL") {
            return None;
        }
        let mut items = Vec::new();
        loop {
            if self
                .peek()
                .is_some_and(|t| t.kind == TokenKind::Operator && &self.text[t.range()] == "*")
            {
                return None;
            }
            let item = self.operand();
            if item.range.is_empty() {
                return None;
            }
            // An alias: `0 AS Generation`, `0 Generation`.
            let explicit = self.eat_word("AS");
            if explicit
                || self
                    .peek()
                    .is_some_and(|t| is_name(t) && !is_any_word(self.text, t, &STOP_WORDS))
            {
                self.pos += 1;
            }
            items.push(item);
            if self.at_kind(TokenKind::Comma) {
                self.pos += 1;
            } else {
                return Some(items);
            }
        }
    }

    pub(super) fn column_list(&mut self) -> Vec<String> {
        let start = self.pos;
        self.skip_group();
        self.tokens[start..self.pos]
            .iter()
            .filter(|t| is_name(t))
            .map(|t| ident_text(self.text, t).to_owned())
            .collect()
    }
}
