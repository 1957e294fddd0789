//! Leading common table expressions (`WITH c AS (...)`): the tables they read and
//! the conditions that restrict a write through them.

use super::find::matching_open;
use super::{Parser, TableName, tables_in};
use crate::expr::Predicate;
use crate::lex::{TokenKind, ident_text, is_any_word, is_word};
use crate::words::words;

impl Parser<'_, '_> {
    pub(super) fn cte_tables(&mut self, first: usize, keyword: usize) -> Vec<(TableName, String)> {
        let mut out = Vec::new();
        let mut i = first + 1;
        while i < keyword {
            if is_word(self.text, &self.tokens[i], "AS")
                && self
                    .tokens
                    .get(i + 1)
                    .is_some_and(|t| t.kind == TokenKind::LParen)
            {
                let mut name_index = i - 1;
                if self.tokens[name_index].kind == TokenKind::RParen {
                    name_index = matching_open(self.tokens, name_index)
                        .unwrap_or(1)
                        .saturating_sub(1);
                }
                let name = ident_text(self.text, &self.tokens[name_index]).to_owned();
                let open = i + 1;
                let mut depth = 0usize;
                let mut close = open;
                for (j, t) in self.tokens.iter().enumerate().skip(open) {
                    match t.kind {
                        TokenKind::LParen => depth += 1,
                        TokenKind::RParen => {
                            depth -= 1;
                            if depth == 0 {
                                close = j;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                let tables = tables_in(self.text, &self.tokens[open..close]);
                if tables.len() == 1
                    && let Some(filter) = self.cte_filter(open, close)
                {
                    self.cte_filters.push((name.clone(), filter));
                }
                if let Some(table) = tables.into_iter().next() {
                    out.push((table, name));
                }
                i = close + 1;
            } else {
                i += 1;
            }
        }
        out
    }

    /// The `WHERE` of a CTE body `( SELECT [TOP (n)] ... FROM t ... WHERE ... )` between
    /// the parentheses at `open` and `close`, when the body is one plain SELECT of one
    /// table (no join, set operation or grouping), so that its condition restricts the
    /// rows a write through the CTE changes: the index of `WHERE`.
    pub(super) fn cte_filter(&self, open: usize, close: usize) -> Option<usize> {
        let body = &self.tokens[open + 1..close];
        if !body
            .first()
            .is_some_and(|t| is_word(self.text, t, "SELECT"))
        {
            return None;
        }
        let mut depth = 0usize;
        let mut filter = None;
        for (j, t) in body.iter().enumerate() {
            match t.kind {
                TokenKind::LParen => depth += 1,
                TokenKind::RParen => depth = depth.saturating_sub(1),
                TokenKind::Word if depth == 0 => {
                    if is_any_word(
                        self.text,
                        t,
                        words![
                            "JOIN",
                            "APPLY",
                            "UNION",
                            "EXCEPT",
                            "INTERSECT",
                            "GROUP",
                            "HAVING",
                        ],
                    ) {
                        return None;
                    }
                    if is_word(self.text, t, "WHERE") {
                        filter.get_or_insert(open + 1 + j);
                    }
                }
                _ => {}
            }
        }
        filter
    }

    /// The conditions of the CTE named `name` (see [`Parser::cte_filter`]), when they
    /// parse to the end of its WHERE clause.
    pub(super) fn cte_conditions(&self, name: &str) -> Option<Vec<Predicate>> {
        let (_, at) = self
            .cte_filters
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))?;
        self.conditions_at(*at)
    }

    /// The conditions of a derived table between the parentheses at `open` and `close`
    /// that a write through it is restricted by, as a CTE's are.
    pub(super) fn derived_conditions(&self, open: usize, close: usize) -> Option<Vec<Predicate>> {
        if tables_in(self.text, &self.tokens[open..close]).len() != 1 {
            return None;
        }
        self.conditions_at(self.cte_filter(open, close)?)
    }

    /// The conditions of the `WHERE` at `at` inside a CTE or derived table, when they
    /// parse to the end of its clause.
    fn conditions_at(&self, at: usize) -> Option<Vec<Predicate>> {
        let mut sub = Parser::new(self.text, self.tokens, at);
        let (conditions, _) = sub.where_clause().ok()?;
        let ends = sub.peek().is_some_and(|t| {
            t.kind == TokenKind::RParen
                || is_any_word(self.text, t, words!["ORDER", "OPTION", "FOR"])
        });
        ends.then_some(conditions)
    }
}
