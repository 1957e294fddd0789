//! Value expressions, as far as the rules need them: the columns, parameters and
//! clock calls they contain.

use super::{MAX_NESTING, Parser, STOP_WORDS, is_name, tables_in};
use crate::expr::{ColumnRef, Operand};
use crate::lex::{Token, TokenKind, ident_text, is_any_word, is_word};
use crate::words::{WordSet, words};

/// Words that never begin a value: they end an operand even before it has started.
/// The other [`STOP_WORDS`] (statement starters such as `OPEN`, `CLOSE`, `PRINT`) end
/// an operand only after something, so a column named `close` still reads as one.
const CLAUSE_WORDS: WordSet = WordSet::new(&[
    "FROM",
    "WHERE",
    "SET",
    "WHEN",
    "THEN",
    "ELSE",
    "END",
    "ON",
    "USING",
    "RETURNING",
    "OUTPUT",
    "OPTION",
    "ORDER",
    "GROUP",
    "HAVING",
    "LIMIT",
    "OFFSET",
    "UNION",
    "EXCEPT",
    "INTERSECT",
    "INTO",
    "VALUES",
    "SELECT",
    "WITH",
    "GO",
]);

const CLOCK_FUNCTIONS: &[&str] = &[
    "sysutcdatetime",
    "sysdatetime",
    "sysdatetimeoffset",
    "getutcdate",
    "getdate",
    "now",
    "clock_timestamp",
    "statement_timestamp",
    "transaction_timestamp",
    "current_timestamp",
    "localtimestamp",
];
const SQLITE_CLOCK_FUNCTIONS: &[&str] = &[
    "unixepoch",
    "julianday",
    "strftime",
    "datetime",
    "date",
    "time",
];
const CLOCK_KEYWORDS: WordSet =
    WordSet::new(&["CURRENT_TIMESTAMP", "LOCALTIMESTAMP", "SYSTIMESTAMP"]);
const VALUE_KEYWORDS: WordSet = WordSet::new(&[
    "NULL",
    "TRUE",
    "FALSE",
    "CURRENT_DATE",
    "CURRENT_TIME",
    "INTERVAL",
    "DEFAULT",
    "DISTINCT",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "END",
    "AT",
    "TIME",
    "ZONE",
    "COLLATE",
    "ESCAPE",
    "ASC",
    "DESC",
    "ALL",
    "ANY",
    "SOME",
    "EXISTS",
    "UNKNOWN",
]);
const DATE_FUNCTIONS: &[&str] = &[
    "dateadd",
    "datediff",
    "datediff_big",
    "datepart",
    "datename",
    "date_part",
    "extract",
    "date_trunc",
    "datetrunc",
];

impl Parser<'_, '_> {
    /// A value expression: tokens up to a comparison, a boolean keyword, a comma, a
    /// closing parenthesis or a clause boundary. Never fails; may be empty.
    pub(super) fn operand(&mut self) -> Operand {
        match self.lone_value() {
            Some(operand) => operand,
            None => self.any_operand(),
        }
    }

    fn any_operand(&mut self) -> Operand {
        let start_pos = self.pos;
        let mut operand = Operand::default();
        let mut count = 0;
        while let Some(t) = self.peek() {
            let text = &self.text[t.range()];
            match t.kind {
                TokenKind::Semicolon
                | TokenKind::BatchSeparator
                | TokenKind::RParen
                | TokenKind::Comma => break,
                TokenKind::Operator => {
                    if matches!(
                        text,
                        "=" | "==" | "<>" | "!=" | "<" | "<=" | ">" | ">=" | "!<" | "!>"
                    ) {
                        break;
                    }
                    if text == "::" {
                        // A cast: skip the type name.
                        self.pos += 1;
                        let _ = self.dotted_name();
                        if self.at_kind(TokenKind::LParen) {
                            self.skip_group();
                        }
                        while self.peek().is_some_and(|t| &self.text[t.range()] == "[") {
                            self.pos += 1;
                        }
                        count += 1;
                        continue;
                    }
                    self.pos += 1;
                }
                TokenKind::LParen => {
                    let sub = self.peek_at(1).is_some_and(|t| {
                        is_any_word(self.text, t, words!["SELECT", "WITH", "VALUES"])
                    });
                    if sub {
                        operand.subquery = true;
                        let start = self.pos;
                        self.skip_group();
                        operand
                            .subquery_tables
                            .extend(tables_in(self.text, &self.tokens[start..self.pos]));
                    } else {
                        self.pos += 1;
                        self.call_arguments(&mut operand);
                    }
                }
                TokenKind::Parameter | TokenKind::Placeholder => {
                    operand.parameter = true;
                    self.pos += 1;
                }
                TokenKind::String | TokenKind::Number => {
                    self.pos += 1;
                }
                TokenKind::Word | TokenKind::QuotedIdent => {
                    if t.kind == TokenKind::Word {
                        if is_word(self.text, t, "CASE") {
                            let case_start = self.pos;
                            self.skip_case();
                            // Scan the CASE body for columns and clocks.
                            let saved = self.pos;
                            self.pos = case_start + 1;
                            self.nesting += 1;
                            while self.pos < saved.saturating_sub(1) && self.nesting < MAX_NESTING {
                                let mut inner = self.operand();
                                operand.columns.append(&mut inner.columns);
                                operand.clock |= inner.clock;
                                operand.parameter |= inner.parameter;
                                if self.pos < saved.saturating_sub(1) {
                                    self.pos += 1;
                                }
                            }
                            self.nesting -= 1;
                            self.pos = saved;
                            count += 1;
                            continue;
                        }
                        if is_any_word(self.text, t, &CLOCK_KEYWORDS)
                            && !self.peek_at(1).is_some_and(|n| n.kind == TokenKind::LParen)
                        {
                            operand.clock = true;
                            self.pos += 1;
                            count += 1;
                            continue;
                        }
                        if is_any_word(
                            self.text,
                            t,
                            words![
                                "AND", "OR", "NOT", "IS", "IN", "LIKE", "ILIKE", "BETWEEN",
                                "ESCAPE", "GLOB", "SIMILAR", "REGEXP", "AS",
                            ],
                        ) || is_any_word(self.text, t, &CLAUSE_WORDS)
                            || (count > 0 && is_any_word(self.text, t, &STOP_WORDS))
                        {
                            break;
                        }
                        if is_word(self.text, t, "NULL") {
                            self.pos += 1;
                            count += 1;
                            if count == 1 && self.operand_ends_here() {
                                operand.null = true;
                            }
                            continue;
                        }
                        if is_any_word(self.text, t, &VALUE_KEYWORDS) {
                            self.pos += 1;
                            count += 1;
                            continue;
                        }
                    }
                    let Some(name) = self.dotted_name() else {
                        self.pos += 1;
                        continue;
                    };
                    if self.at_kind(TokenKind::LParen) && name.parts <= 3 {
                        let function = name.last.to_ascii_lowercase();
                        self.pos += 1;
                        if CLOCK_FUNCTIONS.contains(&function.as_str()) {
                            operand.clock = true;
                            self.call_arguments(&mut operand);
                        } else if SQLITE_CLOCK_FUNCTIONS.contains(&function.as_str()) {
                            let arg_start = self.pos;
                            let mut inner = Operand::default();
                            self.call_arguments(&mut inner);
                            let args = &self.tokens[arg_start..self.pos];
                            let literal = |a: &Token, s: &str| {
                                a.kind == TokenKind::String
                                    && self.text[a.range()].eq_ignore_ascii_case(s)
                            };
                            let now = args.iter().any(|a| literal(a, "'now'"));
                            // `unixepoch()`, `unixepoch('subsec')`: no time value means now.
                            let implicit_now = function == "unixepoch"
                                && args.iter().all(|a| {
                                    matches!(a.kind, TokenKind::RParen | TokenKind::Comma)
                                        || literal(a, "'subsec'")
                                        || literal(a, "'subsecond'")
                                });
                            operand.clock |= inner.clock || now || implicit_now;
                            operand.columns.append(&mut inner.columns);
                            operand.parameter |= inner.parameter;
                            operand.subquery |= inner.subquery;
                            operand.subquery_tables.append(&mut inner.subquery_tables);
                        } else if function == "cast"
                            || function == "try_cast"
                            || function == "convert"
                            || function == "try_convert"
                        {
                            self.call_arguments(&mut operand);
                        } else {
                            let datepart = DATE_FUNCTIONS.contains(&function.as_str());
                            if datepart
                                && self.peek().is_some_and(|t| {
                                    t.kind == TokenKind::Word || t.kind == TokenKind::String
                                })
                            {
                                self.pos += 1; // the date part
                                if self.at_word("FROM") {
                                    self.pos += 1;
                                }
                            }
                            self.call_arguments(&mut operand);
                        }
                    } else {
                        operand.columns.push(ColumnRef {
                            qualifier: name.qualifier.map(std::borrow::Cow::into_owned),
                            name: name.last.to_string(),
                            range: name.range,
                        });
                    }
                }
                TokenKind::Dot | TokenKind::Other => {
                    self.pos += 1;
                }
            }
            count += 1;
        }
        if self.pos > start_pos {
            operand.range =
                self.tokens[start_pos].range().start..self.tokens[self.pos - 1].range().end;
            let slice = &self.tokens[start_pos..self.pos];
            if let [only] = slice
                && only.kind == TokenKind::Number
            {
                operand.integer = self.text[only.range()].parse().ok();
            }
            operand.increment_of = self.increment(slice);
        } else {
            let at = self.peek().map_or(self.text.len(), |t| t.range().start);
            operand.range = at..at;
        }
        operand
    }

    /// A literal, parameter or `NULL` alone before `,`, `)`, `;` or the end, as in most
    /// `VALUES` rows: the operand the general loop makes of it, made directly.
    fn lone_value(&mut self) -> Option<Operand> {
        let t = self.peek()?;
        let alone = self.peek_at(1).is_none_or(|next| {
            matches!(
                next.kind,
                TokenKind::Comma
                    | TokenKind::RParen
                    | TokenKind::Semicolon
                    | TokenKind::BatchSeparator
            )
        });
        if !alone {
            return None;
        }
        let mut operand = Operand {
            range: t.range(),
            ..Operand::default()
        };
        match t.kind {
            TokenKind::String => {}
            TokenKind::Number => operand.integer = self.text[t.range()].parse().ok(),
            TokenKind::Parameter | TokenKind::Placeholder => operand.parameter = true,
            TokenKind::Word if is_word(self.text, t, "NULL") => operand.null = true,
            _ => return None,
        }
        self.pos += 1;
        Some(operand)
    }

    pub(super) fn operand_ends_here(&self) -> bool {
        match self.peek() {
            None => true,
            Some(t) => match t.kind {
                TokenKind::Semicolon
                | TokenKind::BatchSeparator
                | TokenKind::RParen
                | TokenKind::Comma => true,
                TokenKind::Operator => matches!(
                    &self.text[t.range()],
                    "=" | "<>" | "!=" | "<" | "<=" | ">" | ">="
                ),
                TokenKind::Word => {
                    is_any_word(
                        self.text,
                        t,
                        words!["AND", "OR", "NOT", "IS", "IN", "LIKE", "BETWEEN"],
                    ) || is_any_word(self.text, t, &STOP_WORDS)
                }
                _ => false,
            },
        }
    }

    /// `col + 1` or `1 + col`.
    pub(super) fn increment(&self, slice: &[Token]) -> Option<ColumnRef> {
        let plus = slice
            .iter()
            .position(|t| t.kind == TokenKind::Operator && &self.text[t.range()] == "+")?;
        let (left, right) = (&slice[..plus], &slice[plus + 1..]);
        let column_of = |side: &[Token]| -> Option<ColumnRef> {
            let names: Vec<&Token> = side.iter().filter(|t| t.kind != TokenKind::Dot).collect();
            if names.is_empty()
                || !names.iter().all(|t| is_name(t))
                || side.len() != names.len() * 2 - 1
            {
                return None;
            }
            let last = names.last()?;
            Some(ColumnRef {
                qualifier: (names.len() >= 2)
                    .then(|| ident_text(self.text, names[names.len() - 2]).to_owned()),
                name: ident_text(self.text, last).to_owned(),
                range: side[0].range().start..last.range().end,
            })
        };
        let one = |side: &[Token]| matches!(side, [t] if t.kind == TokenKind::Number && &self.text[t.range()] == "1");
        if one(right) {
            column_of(left)
        } else if one(left) {
            column_of(right)
        } else {
            None
        }
    }

    /// Inside `(`: scans the arguments up to the matching `)` into `operand`.
    pub(super) fn call_arguments(&mut self, operand: &mut Operand) {
        if self.nesting >= MAX_NESTING {
            // Skip to the matching `)` without recursing.
            let mut depth = 1usize;
            while let Some(t) = self.peek() {
                self.pos += 1;
                match t.kind {
                    TokenKind::LParen => depth += 1,
                    TokenKind::RParen => {
                        depth -= 1;
                        if depth == 0 {
                            return;
                        }
                    }
                    _ => {}
                }
            }
            return;
        }
        self.nesting += 1;
        self.call_arguments_inner(operand);
        self.nesting -= 1;
    }

    pub(super) fn call_arguments_inner(&mut self, operand: &mut Operand) {
        loop {
            let mut inner = self.operand();
            operand.columns.append(&mut inner.columns);
            operand.clock |= inner.clock;
            operand.parameter |= inner.parameter;
            operand.subquery |= inner.subquery;
            operand.subquery_tables.append(&mut inner.subquery_tables);
            match self.peek() {
                Some(t) if t.kind == TokenKind::RParen => {
                    self.pos += 1;
                    return;
                }
                Some(t) if t.kind == TokenKind::Comma || t.kind == TokenKind::Operator => {
                    self.pos += 1
                }
                Some(t) if is_word(self.text, t, "AS") => {
                    // CAST(x AS type(n))
                    self.pos += 1;
                    let _ = self.dotted_name();
                    if self.at_kind(TokenKind::LParen) {
                        self.skip_group();
                    }
                }
                Some(t) if t.kind == TokenKind::Word && !matches!(t.kind, TokenKind::Semicolon) => {
                    // Boolean keywords or clause words inside a call (`IIF(a > b, ...)`,
                    // `EXTRACT(x FROM y)`, window `OVER (ORDER BY ...)`): step over.
                    self.pos += 1;
                }
                Some(t) if matches!(t.kind, TokenKind::Semicolon | TokenKind::BatchSeparator) => {
                    return;
                }
                Some(_) => self.pos += 1,
                None => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Parser;
    use crate::lex::lex;

    /// The shortcut for lone values makes the operand the general loop makes.
    #[test]
    fn lone_values_are_read_as_the_general_loop_reads_them() {
        for text in [
            "1, 2",
            "'x')",
            "N'x';",
            "@p",
            "$1,",
            "?2)",
            ":name,",
            "NULL)",
            "null",
            "<a, int, 3>,",
            "$(var))",
            "42\nGO",
            "99999999999999999999,",
        ] {
            // After `(`, as in a row: `:name` at the start of a line is a SQLCMD command.
            let text = &format!("({text}");
            let lexed = lex(text);
            let mut lone = Parser::new(text, &lexed.tokens, 1);
            let mut general = Parser::new(text, &lexed.tokens, 1);
            let Some(fast) = lone.lone_value() else {
                panic!("{text}: not read as a lone value");
            };
            assert_eq!(fast, general.any_operand(), "{text}");
            assert_eq!(lone.pos, general.pos, "{text}");
        }
        for text in ["1 + 2,", "-1,", "NULLIF(a, b)", "x,", "'a' || 'b'"] {
            let lexed = lex(text);
            assert!(
                Parser::new(text, &lexed.tokens, 0).lone_value().is_none(),
                "{text}"
            );
        }
    }
}
