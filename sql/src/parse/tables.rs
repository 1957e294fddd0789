//! Table references: qualified names, aliases, `FROM` lists and joins.

use std::borrow::Cow;
use std::ops::Range;

use super::{MAX_NESTING, Parser, STOP_WORDS, TableName, is_name};
use crate::Dialect;
use crate::expr::Predicate;
use crate::lex::{Token, TokenKind, ident_name_escaped, is_any_word};
use crate::words::{WordSet, words};

/// A possibly qualified name as written, unquoted: its last two parts are all the
/// statements need, and they stay borrowed from the text unless unquoting changed them.
pub(super) struct Dotted<'a> {
    /// How many parts (`a.b.c`: 3; an empty middle part, `a..c`, counts).
    pub(super) parts: usize,
    /// The last part: the name.
    pub(super) last: Cow<'a, str>,
    /// The part before the last (`""` for `a..c`), when there are two or more.
    pub(super) qualifier: Option<Cow<'a, str>>,
    /// Byte range of the whole name.
    pub(super) range: Range<usize>,
}

/// Whether `a` and `b` name the same object where a write is resolved through a name
/// (SQL Server's alias rule, its updatable common table expressions, and the tolerant
/// reading that takes them): SQL Server's default collations ignore case, non-ASCII
/// letters' included.
pub(super) fn same_ignoring_case(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
        || (!(a.is_ascii() && b.is_ascii()) && a.to_lowercase() == b.to_lowercase())
}

/// Whether `table` exists only on SQL Server: a table variable (`@t`) or a temporary
/// table (`#t`, `##t`). A statement that writes one through an alias is SQL Server's,
/// and no other database's reading of it applies.
pub(super) fn sql_server_only(table: &TableName) -> bool {
    table.schema.is_none() && table.name.starts_with(['@', '#'])
}

/// An entry of a `FROM` or `USING` list that a target can be resolved to.
pub(super) struct FromItem {
    /// The table; for a derived table, the first table it selects from.
    pub(super) table: TableName,
    /// Its alias.
    pub(super) alias: Option<String>,
    /// A derived table (`(SELECT ... FROM t) AS a`): the indices of its parentheses.
    pub(super) derived: Option<(usize, usize)>,
}

impl<'a> Parser<'a, '_> {
    /// The name the token at the cursor stands for, the cursor moved past it: unquoted,
    /// and a Unicode-escaped name decoded with the escape its `UESCAPE` names.
    fn name_part(&mut self, token: &Token) -> Cow<'a, str> {
        self.pos += 1;
        if token.kind == TokenKind::Word {
            return Cow::Borrowed(&self.text[token.range()]);
        }
        let mut escape = '\\';
        if token.kind == TokenKind::QuotedIdent
            && matches!(self.text.as_bytes()[token.range().start], b'U' | b'u')
            && self.at_word("UESCAPE")
            && let Some(quoted) = self.peek_at(1).filter(|t| t.kind == TokenKind::String)
        {
            let mut chars = self.text[quoted.range()].chars();
            if let (Some('\''), Some(c), Some('\''), None) =
                (chars.next(), chars.next(), chars.next(), chars.next())
            {
                escape = c;
                self.pos += 2;
            }
        }
        ident_name_escaped(self.text, token, escape)
    }

    /// A possibly qualified name: `a`, `a.b`, `a.b.c`, `a..c`, `a.*`.
    pub(super) fn dotted_name(&mut self) -> Option<Dotted<'a>> {
        let first = self.peek().filter(|t| is_name(t))?;
        let mut name = Dotted {
            parts: 1,
            last: self.name_part(first),
            qualifier: None,
            range: first.range(),
        };
        let push = |name: &mut Dotted<'a>, part: Cow<'a, str>| {
            name.parts += 1;
            name.qualifier = Some(std::mem::replace(&mut name.last, part));
        };
        while self.at_kind(TokenKind::Dot) {
            self.pos += 1;
            match self.peek() {
                Some(t) if is_name(t) => {
                    let part = self.name_part(t);
                    push(&mut name, part);
                    name.range.end = t.range().end;
                }
                Some(t) if t.kind == TokenKind::Dot => push(&mut name, Cow::Borrowed("")),
                Some(t) if t.kind == TokenKind::Operator && &self.text[t.range()] == "*" => {
                    push(&mut name, Cow::Borrowed("*"));
                    name.range.end = t.range().end;
                    self.pos += 1;
                    break;
                }
                _ => break,
            }
        }
        Some(name)
    }

    pub(super) fn table_name(&mut self) -> Option<TableName> {
        // T-SQL `OBJECT::name`.
        if self.at_word("OBJECT")
            && self
                .peek_at(1)
                .is_some_and(|t| &self.text[t.range()] == "::")
        {
            self.pos += 2;
        }
        // T-SQL table variables: `UPDATE @work SET ...`.
        if let Some(t) = self.peek().filter(|t| t.kind == TokenKind::Parameter) {
            self.pos += 1;
            return Some(TableName {
                schema: None,
                name: self.text[t.range()].to_owned(),
                range: t.range(),
            });
        }
        let name = self.dotted_name()?;
        Some(TableName {
            schema: name
                .qualifier
                .filter(|schema| !schema.is_empty())
                .map(Cow::into_owned),
            name: name.last.into_owned(),
            range: name.range,
        })
    }

    /// An optional alias after a table reference: `[AS] alias`, skipping table hints
    /// (`WITH (ROWLOCK)`) and PostgreSQL's `*`.
    pub(super) fn alias(&mut self) -> Option<String> {
        if self.at_word("WITH") && self.peek_at(1).is_some_and(|t| t.kind == TokenKind::LParen) {
            self.pos += 1;
            self.skip_group();
        }
        let explicit = self.eat_word("AS");
        let alias = match self.peek() {
            Some(t)
                if is_name(t)
                    && (explicit
                        || !is_any_word(self.text, t, &STOP_WORDS)
                            && !is_any_word(self.text, t, &JOIN_WORDS)) =>
            {
                Some(self.name_part(t).into_owned())
            }
            _ => None,
        };
        if self.at_word("WITH") && self.peek_at(1).is_some_and(|t| t.kind == TokenKind::LParen) {
            self.pos += 1;
            self.skip_group();
        }
        alias
    }

    /// A `FROM`/`USING` list: table references with aliases, and joins. Returns its
    /// tables and derived tables with their aliases; subqueries are scanned for the
    /// tables they mention. The `ON`
    /// condition of an inner join restricts the joined rows as a `WHERE` does, so each
    /// one read to its end goes to `inner_on`; the `ON` of an outer, cross or lateral
    /// join does not restrict the other side's rows, and is only scanned.
    pub(super) fn table_list(
        &mut self,
        mentioned: &mut Vec<TableName>,
        inner_on: &mut Vec<Predicate>,
    ) -> Vec<FromItem> {
        let mut out = Vec::new();
        let mut after_join = false;
        let mut inner = false;
        loop {
            if let Some(joined) = self.parenthesised_join(mentioned, inner_on) {
                out.extend(joined);
            } else if self.at_kind(TokenKind::LParen) {
                let start = self.pos;
                self.skip_group();
                let inside = tables_in(self.text, &self.tokens[start..self.pos]);
                let close = self.pos - 1;
                let alias = self.alias();
                if alias.is_some() && self.at_kind(TokenKind::LParen) {
                    self.skip_group(); // column aliases: `(VALUES ...) s(a, b)`
                }
                if let (Some(table), Some(_)) = (inside.first(), &alias) {
                    out.push(FromItem {
                        table: table.clone(),
                        alias,
                        derived: Some((start, close)),
                    });
                }
                mentioned.extend(inside);
            } else if self.at_word("ONLY") || self.at_word("LATERAL") {
                self.pos += 1;
                continue;
            } else if let Some(table) = self.table_name() {
                if self.at_kind(TokenKind::LParen) {
                    // A table-valued function call.
                    self.skip_group();
                    let _ = self.alias();
                } else {
                    let alias = self.alias();
                    mentioned.push(table.clone());
                    out.push(FromItem {
                        table,
                        alias,
                        derived: None,
                    });
                }
            } else {
                break;
            }
            if self.at_kind(TokenKind::Comma) {
                self.pos += 1;
                continue;
            }
            if let Some(is_inner) = self.join_words() {
                after_join = true;
                inner = is_inner;
                continue;
            }
            if after_join && self.eat_word("ON") {
                let start = self.pos;
                let condition = self.condition();
                mentioned.extend(tables_in(self.text, &self.tokens[start..self.pos]));
                // Only a condition read to its end counts: one that stopped short may be
                // the first half of an `OR`.
                let read_whole = self.at_boundary()
                    || self.at_kind(TokenKind::Comma)
                    || self
                        .peek()
                        .is_some_and(|t| is_any_word(self.text, t, &JOIN_WORDS));
                if let Ok(condition) = condition
                    && inner
                    && read_whole
                {
                    inner_on.push(condition);
                }
                if let Some(is_inner) = self.join_words() {
                    inner = is_inner;
                    continue;
                }
            }
            if after_join && self.eat_word("USING") {
                self.skip_group();
                continue;
            }
            break;
        }
        out
    }

    /// A parenthesised join at the cursor, `(t AS a JOIN u ON ...)` (and `(t)`): its
    /// entries, each with its alias, for they are the enclosing list's own (SQL Server
    /// writes `a` in `UPDATE a ... FROM (t AS a JOIN u ON ...)`); the cursor after it
    /// and its alias, if any. `None`, the cursor unmoved, for any other group: a derived
    /// table, a subquery.
    fn parenthesised_join(
        &mut self,
        mentioned: &mut Vec<TableName>,
        inner_on: &mut Vec<Predicate>,
    ) -> Option<Vec<FromItem>> {
        let first = self.peek_at(1)?;
        let joined = self.at_kind(TokenKind::LParen)
            && (first.kind == TokenKind::LParen
                || is_name(first) && !is_any_word(self.text, first, &STOP_WORDS));
        if !joined || self.nesting >= MAX_NESTING {
            return None;
        }
        let start = self.pos;
        self.pos += 1;
        self.nesting += 1;
        let (mut inner_mentioned, mut inner_conditions) = (Vec::new(), Vec::new());
        let items = self.table_list(&mut inner_mentioned, &mut inner_conditions);
        self.nesting -= 1;
        if items.is_empty() || !self.at_kind(TokenKind::RParen) {
            self.pos = start;
            return None;
        }
        self.pos += 1;
        let _ = self.alias();
        mentioned.extend(inner_mentioned);
        inner_on.extend(inner_conditions);
        Some(items)
    }

    /// The entry of a `FROM` list that SQL Server's alias rule makes the target named
    /// `target`: the one whose alias is that name. PostgreSQL and SQLite have no such
    /// rule: the name after `UPDATE` is a table's.
    pub(super) fn aliased<'f>(
        &self,
        target: &TableName,
        from: &'f [FromItem],
    ) -> Option<&'f FromItem> {
        if target.schema.is_some() || !self.reading.follows(Dialect::Mssql) {
            return None;
        }
        from.iter().find(|item| {
            item.alias
                .as_deref()
                .is_some_and(|a| same_ignoring_case(a, &target.name))
        })
    }

    /// Consumes the words of a join (`JOIN`, `INNER JOIN`, `LEFT OUTER JOIN`, `CROSS
    /// APPLY`, `INNER HASH JOIN`, ...): `None` when they do not end in `JOIN` or `APPLY`
    /// (then they were no join), else whether it is an inner join.
    pub(super) fn join_words(&mut self) -> Option<bool> {
        let mut joined = false;
        let mut inner = true;
        while self
            .peek()
            .is_some_and(|t| is_any_word(self.text, t, &JOIN_WORDS))
        {
            joined |= self.at_word("JOIN") || self.at_word("APPLY");
            if self.peek().is_some_and(|t| {
                is_any_word(
                    self.text,
                    t,
                    words![
                        "LEFT", "RIGHT", "FULL", "OUTER", "CROSS", "NATURAL", "APPLY",
                    ],
                )
            }) {
                inner = false;
            }
            self.pos += 1;
        }
        joined.then_some(inner)
    }
}

const JOIN_WORDS: WordSet = WordSet::new(&[
    "JOIN", "INNER", "LEFT", "RIGHT", "FULL", "OUTER", "CROSS", "NATURAL", "APPLY", "LOOP", "HASH",
]);

/// Tables named after `FROM`, `JOIN`, `UPDATE`, `INTO` or `USING` in a token slice.
pub fn tables_in(text: &str, tokens: &[Token]) -> Vec<TableName> {
    let mut out = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        if is_any_word(
            text,
            t,
            words!["FROM", "JOIN", "UPDATE", "INTO", "USING", "APPLY"],
        ) {
            let mut parser = Parser::new(text, tokens, i + 1);
            parser.eat_word("ONLY");
            if let Some(table) = parser.table_name()
                && !parser.at_kind(TokenKind::LParen)
            {
                out.push(table);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::same_ignoring_case;

    #[test]
    fn names_are_compared_ignoring_case() {
        assert!(same_ignoring_case("Report", "REPORT"));
        assert!(same_ignoring_case("Éclair", "éclair"));
        assert!(!same_ignoring_case("Report", "Reports"));
    }
}
