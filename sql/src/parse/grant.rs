//! `GRANT`.

use super::{Grant, ParamStyle, Parser, SqlError, Statement, StatementKind, Via};
use crate::lex::{TokenKind, is_any_word, is_word};
use crate::words::words;

impl Parser<'_, '_> {
    pub(super) fn grant(&mut self) -> Result<Statement, SqlError> {
        self.pos += 1; // GRANT
        let mut privileges = Vec::new();
        while let Some(t) = self.peek() {
            if is_word(self.text, t, "ON")
                || matches!(t.kind, TokenKind::Semicolon | TokenKind::BatchSeparator)
            {
                break;
            }
            if is_word(self.text, t, "TO") {
                break;
            }
            match t.kind {
                TokenKind::Word => privileges.push(self.text[t.range()].to_ascii_uppercase()),
                TokenKind::LParen => {
                    self.skip_group();
                    continue;
                }
                _ => {}
            }
            self.pos += 1;
        }
        let mut objects = Vec::new();
        let mut mentioned = Vec::new();
        let mut schemas = Vec::new();
        let mut database = !self.at_word("ON");
        let class_prefix = |parser: &Self, word: &str| {
            parser.at_word(word)
                && parser
                    .peek_at(1)
                    .is_some_and(|n| &parser.text[n.range()] == "::")
        };
        if self.at_word("ON")
            && self
                .peek_at(1)
                .is_some_and(|t| is_word(self.text, t, "ALL"))
        {
            // PostgreSQL `ON ALL TABLES IN SCHEMA a, b`.
            self.pos += 2;
            if self.eat_word("TABLES") && self.eat_word("IN") && self.eat_word("SCHEMA") {
                while let Some(name) = self.dotted_name() {
                    schemas.push(name.last.to_string());
                    if self.at_kind(TokenKind::Comma) {
                        self.pos += 1;
                    } else {
                        break;
                    }
                }
            }
        } else if self.eat_word("ON") && class_prefix(self, "SCHEMA") {
            self.pos += 2;
            if let Some(name) = self.dotted_name() {
                schemas.push(name.last.to_string());
            }
        } else if class_prefix(self, "DATABASE") {
            self.pos += 2;
            database = true;
        } else if self
            .tokens
            .get(self.pos.wrapping_sub(1))
            .is_some_and(|t| is_word(self.text, t, "ON"))
        {
            let is_table_class = self.eat_word("TABLE")
                || !self.peek().is_some_and(|t| {
                    is_any_word(
                        self.text,
                        t,
                        words![
                            "SCHEMA",
                            "DATABASE",
                            "ALL",
                            "SEQUENCE",
                            "FUNCTION",
                            "PROCEDURE",
                            "TYPE",
                            "DOMAIN",
                            "LANGUAGE",
                            "LARGE",
                            "FOREIGN",
                            "TABLESPACE",
                            "ROUTINE",
                        ],
                    ) || self
                        .tokens
                        .get(self.pos + 1)
                        .is_some_and(|n| &self.text[n.range()] == "::")
                        && !is_word(self.text, t, "OBJECT")
                });
            if is_table_class {
                while let Some(table) = self.table_name() {
                    if self.at_kind(TokenKind::LParen) {
                        self.skip_group();
                    }
                    mentioned.push(table.clone());
                    objects.push(table);
                    if self.at_kind(TokenKind::Comma) {
                        self.pos += 1;
                    } else {
                        break;
                    }
                }
            }
        }
        self.skip_clause();
        while self.at_word("TO") || self.at_word("WITH") || self.at_word("AS") {
            self.pos += 1;
            self.skip_clause();
        }
        Ok(Statement {
            param_style: ParamStyle::Unknown,
            kind: StatementKind::Grant,
            range: 0..0,
            target: objects.first().cloned(),
            via: Via::Name,
            alternatives: Vec::new(),
            output_into: None,
            target_names: Vec::new(),
            updates: Vec::new(),
            deletes: false,
            inserts: Vec::new(),
            grant: Some(Grant {
                privileges,
                objects,
                schemas,
                database,
            }),
            mentioned,
        })
    }
}
