//! A tolerant parser for the statements the rules look at: `UPDATE`, `DELETE`, `MERGE`,
//! `INSERT` (with `ON CONFLICT DO UPDATE`), `GRANT` and `TRUNCATE`, in T-SQL, PostgreSQL
//! and SQLite.
//!
//! Statements are found by their keyword wherever they stand (inside procedure bodies,
//! `IF`, `BEGIN`/`END`, `TRY`/`CATCH`, data-modifying CTEs), so a statement without a `;`
//! or a construct the parser does not know costs at most that one statement. Each
//! statement is then parsed forward from its keyword; its clauses end at the first
//! token, at parenthesis depth zero, that cannot continue them (`;`, `GO`, or the
//! keyword of a next statement such as `SELECT`, `IF`, `END`).
//!
//! This module holds the parser's cursor and the clauses every statement shares; the
//! rest is one module per concern: `find` finds the statements, `statement` is what a
//! parsed statement holds, one module per statement kind parses it (`update`,
//! `delete`, `truncate`, `merge`, `insert`, `grant`), and the pieces they are
//! made of have theirs: `tables` (names, aliases, `FROM` lists), `cte` (leading
//! `WITH`), `assignments` (`SET` lists), `condition` (`WHERE`, `ON`) and `operand`
//! (values).

use crate::lex::{Token, TokenKind, is_any_word};
use crate::words::WordSet;
use crate::{Dialect, Reading};

mod assignments;
mod condition;
mod cte;
mod delete;
mod find;
mod grant;
mod insert;
mod merge;
mod operand;
mod statement;
mod tables;
mod truncate;
mod update;

pub use crate::lex::is_word;
pub(crate) use find::find_statements_at;

pub use find::{Found, find_statements};
pub use statement::{
    Assignment, Grant, InsertPart, ParamStyle, SqlError, Statement, StatementKind, TableName,
    UpdateArm, Via,
};
pub use tables::tables_in;

/// Words that end a clause: statement keywords and clause keywords.
const STOP_WORDS: WordSet = WordSet::new(&[
    "SELECT",
    "INSERT",
    "UPDATE",
    "DELETE",
    "MERGE",
    "IF",
    "ELSE",
    "BEGIN",
    "END",
    "DECLARE",
    "SET",
    "RETURN",
    "PRINT",
    "EXEC",
    "EXECUTE",
    "WHILE",
    "COMMIT",
    "ROLLBACK",
    "RAISERROR",
    "THROW",
    "GRANT",
    "REVOKE",
    "DENY",
    "CREATE",
    "ALTER",
    "DROP",
    "TRUNCATE",
    "OPTION",
    "RETURNING",
    "OUTPUT",
    "FROM",
    "WHERE",
    "ORDER",
    "LIMIT",
    "GROUP",
    "HAVING",
    "UNION",
    "EXCEPT",
    "INTERSECT",
    "WHEN",
    "THEN",
    "USING",
    "FETCH",
    "OPEN",
    "CLOSE",
    "DEALLOCATE",
    "WAITFOR",
    "BREAK",
    "CONTINUE",
    "GOTO",
    "USE",
    "LOOP",
    "RAISE",
    "PERFORM",
    "VALUES",
    "ON",
    "INTO",
    "WITH",
    "GO",
    "SAVE",
    "OFFSET",
    "WINDOW",
    "FOR",
    "ELSIF",
    "ELSEIF",
    "EXCEPTION",
    "CALL",
    "DO",
    "REPLACE",
    "BULK",
    "DBCC",
    "CHECKPOINT",
    "RECONFIGURE",
    "REVERT",
    "VACUUM",
    "REINDEX",
    "KILL",
    "BACKUP",
    "RESTORE",
]);

/// Whether `token` can name something: a bare or quoted word, or a template placeholder.
fn is_name(token: &Token) -> bool {
    matches!(
        token.kind,
        TokenKind::Word | TokenKind::QuotedIdent | TokenKind::Placeholder
    )
}

/// Parses the statement found at `found`, in the tolerant reading.
pub fn parse_found(text: &str, tokens: &[Token], found: &Found) -> Result<Statement, SqlError> {
    parse_found_for(text, tokens, found, None)
}

/// Parses the statement found at `found` as `reading` reads it: which table it writes
/// is decided by that database's rules (in the tolerant reading, by SQL Server's, with
/// the others' in [`Statement::alternatives`]). `tokens` are `text` lexed in the same
/// reading.
pub fn parse_found_in(
    reading: Reading,
    text: &str,
    tokens: &[Token],
    found: &Found,
) -> Result<Statement, SqlError> {
    parse_with(reading, text, tokens, found, None)
}

/// What a caller of [`parse_found_for`] examines of an `INSERT` into a table: `None`,
/// nothing past the target; else the name of the table's generation column, the only
/// column whose values it examines.
pub type Wanted<'a> = dyn Fn(&TableName) -> Option<&'a str> + 'a;

/// [`parse_found`] for a caller that looks no further than the target of an `INSERT`
/// unless `wanted` accepts it: the insert is then parsed only as far as its target (its
/// statement ends there, and only a missing target is an error). The `VALUES` rows of
/// an insert `wanted` accepts are skipped whole, not parsed, unless the caller examines
/// them: when its columns are not named, or name the generation column `wanted` gives.
pub fn parse_found_for<'a, 'w>(
    text: &'a str,
    tokens: &'a [Token],
    found: &Found,
    wanted: Option<&'a Wanted<'w>>,
) -> Result<Statement, SqlError> {
    parse_with(Reading::Tolerant, text, tokens, found, wanted)
}

fn parse_with<'a, 'w>(
    reading: Reading,
    text: &'a str,
    tokens: &'a [Token],
    found: &Found,
    wanted: Option<&'a Wanted<'w>>,
) -> Result<Statement, SqlError> {
    let mut parser = Parser::new(text, tokens, found.keyword);
    parser.reading = reading;
    parser.wanted = wanted;
    if found.first < found.keyword {
        parser.ctes = parser.cte_tables(found.first, found.keyword);
    }
    let mut statement = match found.kind {
        StatementKind::Update => parser.update()?,
        StatementKind::Delete => parser.delete()?,
        StatementKind::Merge => parser.merge()?,
        StatementKind::Insert => parser.insert()?,
        StatementKind::Grant => parser.grant()?,
        StatementKind::Truncate => parser.truncate()?,
    };
    let last = parser.pos.saturating_sub(1).max(found.keyword);
    statement.range = tokens[found.first].range().start..tokens[last].range().end;
    // The rules write advice in the statement's parameter style only for an update arm:
    // an INSERT without one, for them, needs none.
    let advice =
        wanted.is_none() || found.kind != StatementKind::Insert || !statement.updates.is_empty();
    if !parser.lean && advice {
        statement.param_style = ParamStyle::of(text, &tokens[found.first..=last]);
    }
    statement.output_into = parser.output_into.take();
    for (table, _) in &parser.ctes {
        statement.mentioned.push(table.clone());
    }
    // CTE targets: `WITH c AS (SELECT ... FROM t) UPDATE c SET ...` writes `t` on SQL
    // Server; PostgreSQL and SQLite write a table named `c`.
    if reading.follows(Dialect::Mssql)
        && let Some(target) = &statement.target
        && target.schema.is_none()
        && let Some((table, _)) = parser
            .ctes
            .iter()
            .find(|(_, name)| tables::same_ignoring_case(name, &target.name))
    {
        // The dequeue idiom, `WITH c AS (SELECT TOP (1) ... FROM t WHERE <fence>) UPDATE c
        // SET ...`: the CTE's condition restricts the rows written as a WHERE would.
        if let Some(conditions) = parser.cte_conditions(&target.name) {
            for arm in &mut statement.updates {
                arm.conditions.extend(conditions.iter().cloned());
            }
        }
        let named = target.clone();
        if statement.via == Via::Name {
            statement.via = Via::Cte(named.range.clone());
        }
        statement.target = Some(table.clone());
        statement.target_names.push(table.name.clone());
        if reading == Reading::Tolerant {
            statement.alternatives.push(named);
        }
    }
    Ok(statement)
}

/// The parser of one statement: a cursor over the tokens of its text.
struct Parser<'a, 'w> {
    /// Whose rules decide which table the statement writes.
    reading: Reading,
    text: &'a str,
    tokens: &'a [Token],
    pos: usize,
    /// `(table read by the CTE, CTE name)` for a leading CTE list.
    ctes: Vec<(TableName, String)>,
    /// `(CTE name, index of its WHERE)` for the CTEs whose condition restricts a write
    /// through them.
    cte_filters: Vec<(String, usize)>,
    /// Current recursion depth of conditions and calls, bounded by [`MAX_NESTING`].
    nesting: usize,
    /// Which `INSERT` targets the caller wants the whole statement of, and their
    /// generation columns (`None`: every target, every value).
    wanted: Option<&'a Wanted<'w>>,
    /// The statement is an `INSERT` of a target not wanted: parse it without keeping
    /// what only its analysis needs.
    lean: bool,
    /// The generation column of a wanted `INSERT` target: the only column whose values
    /// are examined.
    generation: Option<&'w str>,
    /// The table of the statement's `OUTPUT ... INTO`.
    output_into: Option<TableName>,
}

/// Deeper nesting than this is not written by people; the statement is reported as not
/// analysed instead of exhausting the stack.
const MAX_NESTING: usize = 200;

impl<'a, 'w> Parser<'a, 'w> {
    fn new(text: &'a str, tokens: &'a [Token], pos: usize) -> Parser<'a, 'w> {
        Parser {
            reading: Reading::Tolerant,
            text,
            tokens,
            pos,
            ctes: Vec::new(),
            cte_filters: Vec::new(),
            nesting: 0,
            wanted: None,
            lean: false,
            generation: None,
            output_into: None,
        }
    }

    fn peek(&self) -> Option<&'a Token> {
        self.tokens.get(self.pos)
    }

    fn peek_at(&self, ahead: usize) -> Option<&'a Token> {
        self.tokens.get(self.pos + ahead)
    }

    fn at_word(&self, word: &str) -> bool {
        self.peek().is_some_and(|t| is_word(self.text, t, word))
    }

    fn eat_word(&mut self, word: &str) -> bool {
        if self.at_word(word) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn at_kind(&self, kind: TokenKind) -> bool {
        self.peek().is_some_and(|t| t.kind == kind)
    }

    fn error(&self, message: &str) -> SqlError {
        let range = self.peek().map(|t| t.range()).unwrap_or_else(|| {
            self.tokens
                .last()
                .map_or(0..0, |t| t.range().end..t.range().end)
        });
        SqlError {
            message: message.to_owned(),
            range,
        }
    }

    /// At a token that ends the current clause: end of input, `;`, `GO`, `)` closing an
    /// outer group, or a clause or statement keyword.
    fn at_boundary(&self) -> bool {
        match self.peek() {
            None => true,
            Some(t) => match t.kind {
                TokenKind::Semicolon | TokenKind::BatchSeparator | TokenKind::RParen => true,
                TokenKind::Word => is_any_word(self.text, t, &STOP_WORDS),
                _ => false,
            },
        }
    }

    /// Skips a balanced parenthesised group starting at `(`: whether it was closed.
    fn skip_group(&mut self) -> bool {
        let mut depth = 0usize;
        while let Some(t) = self.peek() {
            match t.kind {
                TokenKind::LParen => depth += 1,
                TokenKind::RParen => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        self.pos += 1;
                        return true;
                    }
                }
                TokenKind::BatchSeparator => return false,
                _ => {}
            }
            self.pos += 1;
        }
        false
    }

    /// Skips tokens up to the next boundary at depth 0 (groups skipped whole).
    fn skip_clause(&mut self) {
        while !self.at_boundary() {
            if self.at_kind(TokenKind::LParen) {
                self.skip_group();
            } else if self.at_word("CASE") {
                self.skip_case();
            } else {
                self.pos += 1;
            }
        }
    }

    fn skip_case(&mut self) {
        let mut depth = 0usize;
        while let Some(t) = self.peek() {
            if is_word(self.text, t, "CASE") {
                depth += 1;
            } else if is_word(self.text, t, "END") {
                depth -= 1;
                if depth == 0 {
                    self.pos += 1;
                    return;
                }
            } else if matches!(t.kind, TokenKind::Semicolon | TokenKind::BatchSeparator) {
                return;
            }
            self.pos += 1;
        }
    }

    /// `TOP (n) [PERCENT]` (T-SQL).
    fn skip_top(&mut self) {
        if self.eat_word("TOP") {
            if self.at_kind(TokenKind::LParen) {
                self.skip_group();
            } else {
                self.pos += 1;
            }
            self.eat_word("PERCENT");
        }
    }

    /// After `OUTPUT`: its list, and the table an `INTO` inserts the rows into, which
    /// the statement writes too.
    fn skip_output(&mut self) {
        self.skip_clause();
        if self.eat_word("INTO") {
            let table = self.table_name();
            self.output_into = self.output_into.take().or(table);
            if self.at_kind(TokenKind::LParen) {
                self.skip_group();
            }
        }
    }

    /// Clauses after WHERE that belong to the statement: `RETURNING`, `OPTION (...)`,
    /// `ORDER BY`, `LIMIT`.
    fn tail(&mut self) {
        loop {
            if self.eat_word("RETURNING") || self.eat_word("LIMIT") || self.eat_word("OFFSET") {
                self.skip_clause();
            } else if self.at_word("ORDER")
                && self.peek_at(1).is_some_and(|t| is_word(self.text, t, "BY"))
            {
                self.pos += 2;
                self.skip_clause();
            } else if self.at_word("OPTION")
                && self.peek_at(1).is_some_and(|t| t.kind == TokenKind::LParen)
            {
                self.pos += 1;
                self.skip_group();
            } else {
                break;
            }
        }
    }

    fn expect_boundary(&self, message: &str) -> Result<(), SqlError> {
        if self.at_boundary() {
            Ok(())
        } else {
            Err(self.error(message))
        }
    }
}
