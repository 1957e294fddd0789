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

use std::ops::Range;

use super::expr::{ColumnRef, CompareOp, Operand, Predicate};
use super::lexer::{Token, TokenKind, ident_text};
pub(crate) use super::words::is_word;
use super::words::{STATEMENT_WORDS, WordSet, is_any_word, words};

/// A table reference as written: schema (when qualified) and name, unquoted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableName {
    /// The schema, when the reference is qualified (for three-part names, the middle).
    pub schema: Option<String>,
    /// The table name.
    pub name: String,
    /// Byte range of the whole reference.
    pub range: Range<usize>,
}

/// What kind of statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StatementKind {
    /// `UPDATE`.
    Update,
    /// `DELETE`.
    Delete,
    /// `MERGE`.
    Merge,
    /// `INSERT`, `REPLACE`.
    Insert,
    /// `GRANT`.
    Grant,
    /// `TRUNCATE`.
    Truncate,
}

/// `column = value` in a `SET` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// The column, unquoted, without qualifier.
    pub column: String,
    /// Byte range of the column as written (with qualifier).
    pub column_range: Range<usize>,
    /// The value.
    pub value: Operand,
}

/// An update: the `SET` list and the conditions the updated rows satisfy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateArm {
    /// The assignments.
    pub assignments: Vec<Assignment>,
    /// Conditions, all of which hold (the `WHERE`; for `MERGE`, the `ON` and the arm's
    /// `AND`; for `ON CONFLICT`, the `DO UPDATE ... WHERE`).
    pub conditions: Vec<Predicate>,
    /// Byte range of the `WHERE` condition, when there is one.
    pub where_range: Option<Range<usize>>,
    /// Columns known equal to a value by construction (the `ON CONFLICT (cols)` target).
    pub implied_equal: Vec<String>,
}

/// An insert: its column list and, when given as `VALUES`, its rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InsertPart {
    /// The column list, unquoted; empty when none was written.
    pub columns: Vec<String>,
    /// The `VALUES` rows, or `None` when the rows come from a query or procedure.
    pub rows: Option<Vec<Vec<Operand>>>,
    /// `INSERT OR REPLACE` / `REPLACE INTO`: an existing row is deleted first.
    pub replace: bool,
}

/// How a statement writes its parameters, so that advice can be written the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ParamStyle {
    /// `@name` (T-SQL), or T-SQL without parameters (`[brackets]`, `TOP`, `OUTPUT`...).
    At,
    /// `$1`, `$2` (PostgreSQL); holds the highest number used.
    Numbered(u32),
    /// `?` or `?1` (SQLite).
    Question,
    /// `:name`.
    Colon,
    /// No parameter and no dialect-specific syntax (a PL/pgSQL body using variables).
    #[default]
    Unknown,
}

/// Words only T-SQL has, among those statements use.
const TSQL_WORDS: WordSet = WordSet::new(&[
    "TOP",
    "OUTPUT",
    "SYSUTCDATETIME",
    "GETUTCDATE",
    "GETDATE",
    "NOLOCK",
]);

impl ParamStyle {
    /// The parameters and dialect hints among `tokens`.
    pub fn of(text: &str, tokens: &[Token]) -> ParamStyle {
        let mut numbered = None;
        let mut tsql = false;
        for t in tokens {
            let raw = match t.kind {
                TokenKind::Parameter | TokenKind::QuotedIdent => &text[t.range.clone()],
                TokenKind::Word if TSQL_WORDS.contains(&text.as_bytes()[t.range.clone()]) => {
                    tsql = true;
                    continue;
                }
                _ => continue,
            };
            match t.kind {
                TokenKind::Parameter if raw.starts_with("@@") => tsql = true,
                TokenKind::Parameter if raw.starts_with('@') => return ParamStyle::At,
                TokenKind::Parameter if raw.starts_with('?') => return ParamStyle::Question,
                TokenKind::Parameter if raw.starts_with(':') => return ParamStyle::Colon,
                TokenKind::Parameter if raw.starts_with('$') => {
                    let n = raw[1..].parse::<u32>().unwrap_or(0);
                    numbered = Some(numbered.unwrap_or(0).max(n));
                }
                TokenKind::QuotedIdent if raw.starts_with('[') => tsql = true,
                _ => {}
            }
        }
        match numbered {
            Some(n) => ParamStyle::Numbered(n),
            None if tsql => ParamStyle::At,
            None => ParamStyle::Unknown,
        }
    }

    /// The placeholder for the `index`-th (from 0) value a piece of advice adds, named
    /// `name`: `@name`, `$<next number>`, `?`, `:name` or `<name>`.
    pub fn placeholder(self, name: &str, index: u32) -> String {
        match self {
            ParamStyle::At => format!("@{name}"),
            ParamStyle::Numbered(n) => format!("${}", n + 1 + index),
            ParamStyle::Question => "?".to_owned(),
            ParamStyle::Colon => format!(":{name}"),
            ParamStyle::Unknown => format!("<{name}>"),
        }
    }
}

/// One analysed statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    /// How its parameters are written (for advice).
    pub param_style: ParamStyle,
    /// What kind.
    pub kind: StatementKind,
    /// Byte range from the first keyword (`WITH` of a leading CTE, or the statement's
    /// keyword) to the last token.
    pub range: Range<usize>,
    /// The written target (for `UPDATE alias ... FROM t alias`, resolved to `t`).
    pub target: Option<TableName>,
    /// The names the target is known by in conditions: its alias and its name.
    pub target_names: Vec<String>,
    /// Update arms (`UPDATE`, `MERGE ... THEN UPDATE`, `ON CONFLICT DO UPDATE`).
    pub updates: Vec<UpdateArm>,
    /// Deletes rows of the target (`DELETE`, `MERGE ... THEN DELETE`, `TRUNCATE`).
    pub deletes: bool,
    /// Insert parts (`INSERT`, `MERGE ... THEN INSERT`).
    pub inserts: Vec<InsertPart>,
    /// `GRANT`: what is granted on what.
    pub grant: Option<Grant>,
    /// Tables mentioned anywhere in the statement (targets, `FROM`, `USING`, subqueries).
    pub mentioned: Vec<TableName>,
}

/// What a `GRANT` gives.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Grant {
    /// The privileges, upper-cased (`UPDATE`, `ALL`, `PRIVILEGES`...).
    pub privileges: Vec<String>,
    /// The tables named (`ON t`, `ON TABLE t`, `ON OBJECT::t`).
    pub objects: Vec<TableName>,
    /// Schemas granted on as a whole (`ON SCHEMA::dbo`, `ON ALL TABLES IN SCHEMA public`).
    pub schemas: Vec<String>,
    /// No `ON` clause (T-SQL database-wide permission) or `ON DATABASE::x`.
    pub database: bool,
}

/// A statement that could not be analysed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SqlError {
    /// What was expected, lowercase.
    pub message: String,
    /// Where, in bytes of the input.
    pub range: Range<usize>,
}

/// A statement keyword found in a token stream, before parsing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Index of the statement's keyword token.
    pub keyword: usize,
    /// Index of the first token (a leading `WITH`, or the keyword).
    pub first: usize,
    /// The kind the keyword announces.
    pub kind: StatementKind,
}

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

/// Words after which `UPDATE`, `DELETE`... name an event or a privilege, not a statement.
/// Not `DO` nor `INSTEAD`: a rule's action (`DO INSTEAD UPDATE t SET ...`, `DO DELETE
/// FROM t`) is a statement, and an upsert's `DO UPDATE SET` is told apart by its `SET`.
const BEFORE_NON_STATEMENT: WordSet = WordSet::new(&[
    "FOR", "AFTER", "BEFORE", "OF", "GRANT", "DENY", "REVOKE", "OR", "NO", "TO",
]);

/// After `ON UPDATE` / `ON DELETE` of a foreign key.
const REFERENTIAL_ACTIONS: WordSet = WordSet::new(&["CASCADE", "RESTRICT", "NO", "SET"]);

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

fn is_name(token: &Token) -> bool {
    matches!(
        token.kind,
        TokenKind::Word | TokenKind::QuotedIdent | TokenKind::Placeholder
    )
}

/// Finds the statement keywords of writes and grants in a token stream.
pub fn find_statements(text: &str, tokens: &[Token]) -> Vec<Found> {
    find_statements_at(
        text,
        tokens,
        (0..tokens.len()).filter(|&i| is_any_word(text, &tokens[i], &STATEMENT_WORDS)),
    )
}

/// [`find_statements`] given the indices of the bare words among `tokens` that are
/// statement keywords ([`STATEMENT_WORDS`]), in order, as the lexer notes them.
pub(crate) fn find_statements_at(
    text: &str,
    tokens: &[Token],
    keywords: impl IntoIterator<Item = usize>,
) -> Vec<Found> {
    let mut found = Vec::new();
    for i in keywords {
        let token = &tokens[i];
        let word = &text[token.range.clone()];
        let kind = if word.eq_ignore_ascii_case("UPDATE") {
            StatementKind::Update
        } else if word.eq_ignore_ascii_case("DELETE") {
            StatementKind::Delete
        } else if word.eq_ignore_ascii_case("MERGE") {
            StatementKind::Merge
        } else if word.eq_ignore_ascii_case("INSERT") || word.eq_ignore_ascii_case("REPLACE") {
            StatementKind::Insert
        } else if word.eq_ignore_ascii_case("GRANT") {
            StatementKind::Grant
        } else if word.eq_ignore_ascii_case("TRUNCATE") {
            StatementKind::Truncate
        } else {
            continue;
        };
        let prev = i.checked_sub(1).map(|p| &tokens[p]);
        let next = tokens.get(i + 1);
        if prev.is_some_and(|p| {
            p.kind == TokenKind::Comma
                || p.kind == TokenKind::Dot
                || is_any_word(text, p, &BEFORE_NON_STATEMENT)
        }) {
            continue;
        }
        // Function-like uses (`UPDATE(col)` in triggers, `REPLACE(x, ...)`), `UPDATE STATISTICS`, `MERGE JOIN`.
        if next.is_none_or(|n| {
            n.kind == TokenKind::LParen
                && kind != StatementKind::Insert
                && kind != StatementKind::Grant
        }) {
            continue;
        }
        let next = next.unwrap_or(token);
        // `SET NOCOUNT ON` then a statement, versus `ON DELETE CASCADE` and a rule's
        // event, `CREATE RULE r AS ON UPDATE TO t`.
        if prev.is_some_and(|p| is_word(text, p, "ON"))
            && (is_any_word(text, next, &REFERENTIAL_ACTIONS) || is_word(text, next, "TO"))
        {
            continue;
        }
        match kind {
            StatementKind::Update if is_any_word(text, next, words!["SET", "STATISTICS"]) => {
                continue;
            }
            StatementKind::Merge if is_word(text, next, "JOIN") => continue,
            // A MERGE arm (`THEN DELETE`), also the last thing in a CTE (`... DELETE)`).
            StatementKind::Delete
                if is_any_word(text, next, words!["WHEN", "OUTPUT", "END"])
                    || matches!(next.kind, TokenKind::Semicolon | TokenKind::RParen) =>
            {
                continue;
            }
            StatementKind::Insert => {
                let replace = word.eq_ignore_ascii_case("REPLACE");
                if next.kind == TokenKind::LParen
                    || is_any_word(text, next, words!["VALUES", "DEFAULT"])
                {
                    continue;
                }
                if replace && !is_word(text, next, "INTO") {
                    continue;
                }
                if prev.is_some_and(|p| is_word(text, p, "OR")) {
                    continue;
                }
            }
            _ => {}
        }
        let first = cte_start(text, tokens, i).unwrap_or(i);
        found.push(Found {
            keyword: i,
            first,
            kind,
        });
    }
    found
}

/// When the keyword at `i` follows a CTE list (`WITH a AS (...), b AS (...)`), the index of `WITH`.
fn cte_start(text: &str, tokens: &[Token], i: usize) -> Option<usize> {
    let mut j = i.checked_sub(1)?;
    loop {
        if tokens[j].kind != TokenKind::RParen {
            return None;
        }
        let open = matching_open(tokens, j)?;
        let mut k = open.checked_sub(1)?;
        if is_word(text, &tokens[k], "MATERIALIZED") {
            k = k.checked_sub(1)?;
            if is_word(text, &tokens[k], "NOT") {
                k = k.checked_sub(1)?;
            }
        }
        if !is_word(text, &tokens[k], "AS") {
            return None;
        }
        k = k.checked_sub(1)?;
        if tokens[k].kind == TokenKind::RParen {
            k = matching_open(tokens, k)?.checked_sub(1)?;
        }
        if !is_name(&tokens[k]) {
            return None;
        }
        let before = k.checked_sub(1)?;
        if is_word(text, &tokens[before], "RECURSIVE")
            && before > 0
            && is_word(text, &tokens[before - 1], "WITH")
        {
            return Some(before - 1);
        }
        if is_word(text, &tokens[before], "WITH") {
            return Some(before);
        }
        if tokens[before].kind != TokenKind::Comma {
            return None;
        }
        j = before.checked_sub(1)?;
    }
}

fn matching_open(tokens: &[Token], close: usize) -> Option<usize> {
    let mut depth = 0usize;
    for j in (0..=close).rev() {
        match tokens[j].kind {
            TokenKind::RParen => depth += 1,
            TokenKind::LParen => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
}

/// Parses the statement found at `found`.
pub fn parse_found(text: &str, tokens: &[Token], found: &Found) -> Result<Statement, SqlError> {
    let mut parser = Parser {
        text,
        tokens,
        pos: found.keyword,
        ctes: Vec::new(),
        cte_filters: Vec::new(),
        nesting: 0,
    };
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
    statement.range = tokens[found.first].range.start..tokens[last].range.end;
    statement.param_style = ParamStyle::of(text, &tokens[found.first..=last]);
    for (table, _) in &parser.ctes {
        statement.mentioned.push(table.clone());
    }
    // CTE targets: `WITH c AS (SELECT ... FROM t) UPDATE c SET ...` writes `t`.
    if let Some(target) = &statement.target
        && target.schema.is_none()
        && let Some((table, _)) = parser
            .ctes
            .iter()
            .find(|(_, name)| name.eq_ignore_ascii_case(&target.name))
    {
        // The dequeue idiom, `WITH c AS (SELECT TOP (1) ... FROM t WHERE <fence>) UPDATE c
        // SET ...`: the CTE's condition restricts the rows written as a WHERE would.
        if let Some(conditions) = parser.cte_conditions(&target.name) {
            for arm in &mut statement.updates {
                arm.conditions.extend(conditions.iter().cloned());
            }
        }
        statement.target = Some(table.clone());
        statement.target_names.push(table.name.clone());
    }
    Ok(statement)
}

struct Parser<'a> {
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
}

/// Deeper nesting than this is not written by people; the statement is reported as not
/// analysed instead of exhausting the stack.
const MAX_NESTING: usize = 200;

impl<'a> Parser<'a> {
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
        let range = self.peek().map(|t| t.range.clone()).unwrap_or_else(|| {
            self.tokens
                .last()
                .map_or(0..0, |t| t.range.end..t.range.end)
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

    /// Skips a balanced parenthesised group starting at `(`.
    fn skip_group(&mut self) {
        let mut depth = 0usize;
        while let Some(t) = self.peek() {
            match t.kind {
                TokenKind::LParen => depth += 1,
                TokenKind::RParen => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        self.pos += 1;
                        return;
                    }
                }
                TokenKind::BatchSeparator => return,
                _ => {}
            }
            self.pos += 1;
        }
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

    /// A possibly qualified name: `a`, `a.b`, `a.b.c`, `a..c`. Returns the parts.
    fn dotted_name(&mut self) -> Option<(Vec<String>, Range<usize>)> {
        let first = self.peek().filter(|t| is_name(t))?;
        let start = first.range.start;
        let mut end = first.range.end;
        let mut parts = vec![ident_text(self.text, first).to_owned()];
        self.pos += 1;
        while self.at_kind(TokenKind::Dot) {
            self.pos += 1;
            match self.peek() {
                Some(t) if is_name(t) => {
                    parts.push(ident_text(self.text, t).to_owned());
                    end = t.range.end;
                    self.pos += 1;
                }
                Some(t) if t.kind == TokenKind::Dot => parts.push(String::new()),
                Some(t) if t.kind == TokenKind::Operator && &self.text[t.range.clone()] == "*" => {
                    parts.push("*".to_owned());
                    end = t.range.end;
                    self.pos += 1;
                    break;
                }
                _ => break,
            }
        }
        Some((parts, start..end))
    }

    fn table_name(&mut self) -> Option<TableName> {
        // T-SQL `OBJECT::name`.
        if self.at_word("OBJECT")
            && self
                .peek_at(1)
                .is_some_and(|t| &self.text[t.range.clone()] == "::")
        {
            self.pos += 2;
        }
        // T-SQL table variables: `UPDATE @work SET ...`.
        if let Some(t) = self.peek().filter(|t| t.kind == TokenKind::Parameter) {
            self.pos += 1;
            return Some(TableName {
                schema: None,
                name: self.text[t.range.clone()].to_owned(),
                range: t.range.clone(),
            });
        }
        let (parts, range) = self.dotted_name()?;
        let n = parts.len();
        let name = parts[n - 1].clone();
        let schema = (n >= 2 && !parts[n - 2].is_empty()).then(|| parts[n - 2].clone());
        Some(TableName {
            schema,
            name,
            range,
        })
    }

    /// An optional alias after a table reference: `[AS] alias`, skipping table hints
    /// (`WITH (ROWLOCK)`) and PostgreSQL's `*`.
    fn alias(&mut self) -> Option<String> {
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
                self.pos += 1;
                Some(ident_text(self.text, t).to_owned())
            }
            _ => None,
        };
        if self.at_word("WITH") && self.peek_at(1).is_some_and(|t| t.kind == TokenKind::LParen) {
            self.pos += 1;
            self.skip_group();
        }
        alias
    }

    /// A `FROM`/`USING` list: table references with aliases, and joins. Returns `(table,
    /// alias)` pairs; subqueries are scanned for the tables they mention. The `ON`
    /// condition of an inner join restricts the joined rows as a `WHERE` does, so each
    /// one read to its end goes to `inner_on`; the `ON` of an outer, cross or lateral
    /// join does not restrict the other side's rows, and is only scanned.
    fn table_list(
        &mut self,
        mentioned: &mut Vec<TableName>,
        inner_on: &mut Vec<Predicate>,
    ) -> Vec<(TableName, Option<String>)> {
        let mut out = Vec::new();
        let mut after_join = false;
        let mut inner = false;
        loop {
            if self.at_kind(TokenKind::LParen) {
                let start = self.pos;
                self.skip_group();
                mentioned.extend(tables_in(self.text, &self.tokens[start..self.pos]));
                if self.alias().is_some() && self.at_kind(TokenKind::LParen) {
                    self.skip_group(); // column aliases: `(VALUES ...) s(a, b)`
                }
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
                    out.push((table, alias));
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

    /// Consumes the words of a join (`JOIN`, `INNER JOIN`, `LEFT OUTER JOIN`, `CROSS
    /// APPLY`, `INNER HASH JOIN`, ...): `None` when they do not end in `JOIN` or `APPLY`
    /// (then they were no join), else whether it is an inner join.
    fn join_words(&mut self) -> Option<bool> {
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

    fn cte_tables(&mut self, first: usize, keyword: usize) -> Vec<(TableName, String)> {
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
    fn cte_filter(&self, open: usize, close: usize) -> Option<usize> {
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
    fn cte_conditions(&self, name: &str) -> Option<Vec<Predicate>> {
        let (_, at) = self
            .cte_filters
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))?;
        let mut sub = Parser {
            text: self.text,
            tokens: self.tokens,
            pos: *at,
            ctes: Vec::new(),
            cte_filters: Vec::new(),
            nesting: 0,
        };
        let (conditions, _) = sub.where_clause().ok()?;
        let ends = sub.peek().is_some_and(|t| {
            t.kind == TokenKind::RParen
                || is_any_word(self.text, t, words!["ORDER", "OPTION", "FOR"])
        });
        ends.then_some(conditions)
    }

    fn update(&mut self) -> Result<Statement, SqlError> {
        self.pos += 1; // UPDATE
        if self.eat_word("OR") {
            self.pos += 1; // SQLite conflict resolution
        }
        self.skip_top();
        self.eat_word("ONLY");
        let mut target = self
            .table_name()
            .ok_or_else(|| self.error("expected the table after UPDATE"))?;
        let mut alias = self.alias();
        if !self.eat_word("SET") {
            return Err(self.error("expected SET"));
        }
        let assignments = self.assignments()?;
        let mut mentioned = vec![target.clone()];
        let mut names = vec![target.name.clone()];
        if self.eat_word("OUTPUT") {
            self.skip_output();
        }
        let mut inner_on = Vec::new();
        if self.eat_word("FROM") {
            let from = self.table_list(&mut mentioned, &mut inner_on);
            // `UPDATE alias SET ... FROM schema.table alias`
            if target.schema.is_none() {
                if let Some((table, table_alias)) = from.iter().find(|(_, a)| {
                    a.as_deref()
                        .is_some_and(|a| a.eq_ignore_ascii_case(&target.name))
                }) {
                    names.push(table_alias.clone().unwrap_or_default());
                    target = table.clone();
                    alias = table_alias.clone();
                } else if let Some((table, table_alias)) = from
                    .iter()
                    .find(|(t, _)| t.name.eq_ignore_ascii_case(&target.name))
                {
                    target = table.clone();
                    if let Some(a) = table_alias {
                        names.push(a.clone());
                    }
                }
            }
        }
        let (mut conditions, where_range) = self.where_clause()?;
        conditions.extend(inner_on);
        self.tail();
        if let Some(alias) = alias {
            names.push(alias);
        }
        names.push(target.name.clone());
        Ok(Statement {
            param_style: ParamStyle::Unknown,
            kind: StatementKind::Update,
            range: 0..0,
            target: Some(target),
            target_names: names,
            updates: vec![UpdateArm {
                assignments,
                conditions,
                where_range,
                implied_equal: Vec::new(),
            }],
            deletes: false,
            inserts: Vec::new(),
            grant: None,
            mentioned,
        })
    }

    fn delete(&mut self) -> Result<Statement, SqlError> {
        self.pos += 1; // DELETE
        self.skip_top();
        self.eat_word("FROM");
        self.eat_word("ONLY");
        let mut target = self
            .table_name()
            .ok_or_else(|| self.error("expected the table after DELETE"))?;
        let alias = self.alias();
        let mut mentioned = vec![target.clone()];
        let mut names = vec![target.name.clone()];
        if self.eat_word("OUTPUT") {
            self.skip_output();
        }
        if self.eat_word("FROM") || self.eat_word("USING") {
            // A delete of a fenced row is flagged whatever its conditions.
            let from = self.table_list(&mut mentioned, &mut Vec::new());
            if target.schema.is_none()
                && let Some((table, table_alias)) = from.iter().find(|(_, a)| {
                    a.as_deref()
                        .is_some_and(|a| a.eq_ignore_ascii_case(&target.name))
                })
            {
                names.push(table_alias.clone().unwrap_or_default());
                target = table.clone();
            }
        }
        let _ = self.where_clause();
        self.tail();
        names.extend(alias);
        Ok(Statement {
            param_style: ParamStyle::Unknown,
            kind: StatementKind::Delete,
            range: 0..0,
            target: Some(target),
            target_names: names,
            updates: Vec::new(),
            deletes: true,
            inserts: Vec::new(),
            grant: None,
            mentioned,
        })
    }

    fn truncate(&mut self) -> Result<Statement, SqlError> {
        self.pos += 1;
        self.eat_word("TABLE");
        self.eat_word("ONLY");
        let target = self
            .table_name()
            .ok_or_else(|| self.error("expected the table after TRUNCATE"))?;
        let mut mentioned = vec![target.clone()];
        while self.at_kind(TokenKind::Comma) {
            self.pos += 1;
            mentioned.extend(self.table_name());
        }
        self.skip_clause();
        Ok(Statement {
            param_style: ParamStyle::Unknown,
            kind: StatementKind::Truncate,
            range: 0..0,
            target_names: vec![target.name.clone()],
            target: Some(target),
            updates: Vec::new(),
            deletes: true,
            inserts: Vec::new(),
            grant: None,
            mentioned,
        })
    }

    fn merge(&mut self) -> Result<Statement, SqlError> {
        self.pos += 1; // MERGE
        self.skip_top();
        self.eat_word("INTO");
        let target = self
            .table_name()
            .ok_or_else(|| self.error("expected the table after MERGE"))?;
        let alias = self.alias();
        let mut mentioned = vec![target.clone()];
        if !self.eat_word("USING") {
            return Err(self.error("expected USING"));
        }
        let _ = self.table_list(&mut mentioned, &mut Vec::new());
        if !self.eat_word("ON") {
            return Err(self.error("expected ON"));
        }
        let on = self.condition()?;
        let mut updates = Vec::new();
        let mut inserts = Vec::new();
        let mut deletes = false;
        while self.eat_word("WHEN") {
            self.eat_word("NOT");
            if !self.eat_word("MATCHED") {
                return Err(self.error("expected MATCHED"));
            }
            let mut by_source = false;
            if self.eat_word("BY") {
                by_source = self.at_word("SOURCE");
                self.pos += 1;
            }
            let arm_condition = if self.eat_word("AND") {
                Some(self.condition()?)
            } else {
                None
            };
            if !self.eat_word("THEN") {
                return Err(self.error("expected THEN"));
            }
            if self.eat_word("UPDATE") {
                if !self.eat_word("SET") {
                    return Err(self.error("expected SET"));
                }
                let assignments = self.assignments()?;
                let mut conditions = Vec::new();
                if !by_source {
                    conditions.push(on.clone());
                }
                conditions.extend(arm_condition);
                updates.push(UpdateArm {
                    assignments,
                    conditions,
                    where_range: None,
                    implied_equal: Vec::new(),
                });
            } else if self.eat_word("DELETE") {
                deletes = true;
            } else if self.eat_word("INSERT") {
                inserts.push(self.insert_body(false)?);
            } else if self.eat_word("DO") {
                self.eat_word("NOTHING");
            } else {
                return Err(self.error("expected UPDATE, DELETE or INSERT"));
            }
        }
        if self.eat_word("OUTPUT") {
            self.skip_output();
        }
        self.tail();
        let mut names = vec![target.name.clone()];
        names.extend(alias);
        Ok(Statement {
            param_style: ParamStyle::Unknown,
            kind: StatementKind::Merge,
            range: 0..0,
            target: Some(target),
            target_names: names,
            updates,
            deletes,
            inserts,
            grant: None,
            mentioned,
        })
    }

    fn insert(&mut self) -> Result<Statement, SqlError> {
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
        let mut mentioned = vec![target.clone()];
        let start = self.pos;
        let part = self.insert_body(replace)?;
        mentioned.extend(tables_in(self.text, &self.tokens[start..self.pos]));
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
        let mut names = vec![target.name.clone()];
        names.extend(alias);
        Ok(Statement {
            param_style: ParamStyle::Unknown,
            kind: StatementKind::Insert,
            range: 0..0,
            target: Some(target),
            target_names: names,
            updates,
            deletes: replace,
            inserts: vec![part],
            grant: None,
            mentioned,
        })
    }

    /// After the target of an INSERT (or `THEN INSERT` in MERGE): column list and source.
    fn insert_body(&mut self, replace: bool) -> Result<InsertPart, SqlError> {
        let columns = if self.at_kind(TokenKind::LParen) {
            self.column_list()
        } else {
            Vec::new()
        };
        if self.eat_word("OUTPUT") {
            self.skip_output();
        }
        let rows = if self.eat_word("VALUES") {
            let mut rows = Vec::new();
            while self.at_kind(TokenKind::LParen) {
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
            let mut row = if self.eat_word("SELECT") {
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
    fn select_list(&mut self) -> Option<Vec<Operand>> {
        if self.at_word("DISTINCT") || self.at_word("TOP") || self.at_word("ALL") {
            return None;
        }
        let mut items = Vec::new();
        loop {
            if self.peek().is_some_and(|t| {
                t.kind == TokenKind::Operator && &self.text[t.range.clone()] == "*"
            }) {
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

    fn column_list(&mut self) -> Vec<String> {
        let start = self.pos;
        self.skip_group();
        self.tokens[start..self.pos]
            .iter()
            .filter(|t| is_name(t))
            .map(|t| ident_text(self.text, t).to_owned())
            .collect()
    }

    fn grant(&mut self) -> Result<Statement, SqlError> {
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
                TokenKind::Word => privileges.push(self.text[t.range.clone()].to_ascii_uppercase()),
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
                    .is_some_and(|n| &parser.text[n.range.clone()] == "::")
        };
        if self.at_word("ON")
            && self
                .peek_at(1)
                .is_some_and(|t| is_word(self.text, t, "ALL"))
        {
            // PostgreSQL `ON ALL TABLES IN SCHEMA a, b`.
            self.pos += 2;
            if self.eat_word("TABLES") && self.eat_word("IN") && self.eat_word("SCHEMA") {
                while let Some((parts, _)) = self.dotted_name() {
                    schemas.extend(parts.last().cloned());
                    if self.at_kind(TokenKind::Comma) {
                        self.pos += 1;
                    } else {
                        break;
                    }
                }
            }
        } else if self.eat_word("ON") && class_prefix(self, "SCHEMA") {
            self.pos += 2;
            if let Some((parts, _)) = self.dotted_name() {
                schemas.extend(parts.last().cloned());
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
                        .is_some_and(|n| &self.text[n.range.clone()] == "::")
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

    fn skip_output(&mut self) {
        self.skip_clause();
        if self.eat_word("INTO") {
            let _ = self.table_name();
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

    fn where_clause(&mut self) -> Result<(Vec<Predicate>, Option<Range<usize>>), SqlError> {
        if !self.eat_word("WHERE") {
            return Ok((Vec::new(), None));
        }
        if self.at_word("CURRENT") && self.peek_at(1).is_some_and(|t| is_word(self.text, t, "OF")) {
            self.pos += 3;
            return Ok((Vec::new(), None));
        }
        let start = self
            .peek()
            .map(|t| t.range.start)
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
        let end = self.tokens[self.pos - 1].range.end;
        Ok((vec![condition], Some(start..end)))
    }

    fn expect_boundary(&self, message: &str) -> Result<(), SqlError> {
        if self.at_boundary() {
            Ok(())
        } else {
            Err(self.error(message))
        }
    }

    fn assignments(&mut self) -> Result<Vec<Assignment>, SqlError> {
        let mut out = Vec::new();
        loop {
            // T-SQL `@var = col = expr` and `@var = expr`.
            if self.at_kind(TokenKind::Parameter)
                && self
                    .peek_at(1)
                    .is_some_and(|t| &self.text[t.range.clone()] == "=")
            {
                self.pos += 2;
                let save = self.pos;
                if self.dotted_name().is_some()
                    && self
                        .peek()
                        .is_some_and(|t| &self.text[t.range.clone()] == "=")
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
                    .filter(|t| &self.text[t.range.clone()] == "=")
                    .ok_or_else(|| self.error("expected `=`"))?;
                let column_range = op.range.clone();
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
                let (parts, column_range) = self
                    .dotted_name()
                    .ok_or_else(|| self.error("expected a column in SET"))?;
                if self.at_kind(TokenKind::LParen) && parts.len() >= 2 {
                    // T-SQL mutator methods: `SET Body.WRITE(@chunk, NULL, 0)`,
                    // `SET Doc.modify('...')`. The column is changed from its own value.
                    let column = parts[parts.len() - 2].clone();
                    let start = self.pos;
                    self.pos += 1;
                    let mut value = Operand::default();
                    self.call_arguments(&mut value);
                    value.range =
                        self.tokens[start].range.start..self.tokens[self.pos - 1].range.end;
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
                let op_text = &self.text[op.range.clone()];
                self.pos += 1;
                let mut value = self.operand();
                if op_text != "=" {
                    // `+=` and friends: the value is computed from the column itself.
                    value.columns.push(ColumnRef {
                        qualifier: None,
                        name: parts.last().cloned().unwrap_or_default(),
                        range: column_range.clone(),
                    });
                }
                out.push(Assignment {
                    column: parts.last().cloned().unwrap_or_default(),
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

    /// `or_expr := and_expr (OR and_expr)*`
    fn condition(&mut self) -> Result<Predicate, SqlError> {
        if self.nesting >= MAX_NESTING {
            return Err(self.error("conditions nested too deeply"));
        }
        self.nesting += 1;
        let result = self.disjunction();
        self.nesting -= 1;
        result
    }

    fn disjunction(&mut self) -> Result<Predicate, SqlError> {
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

    fn conjunction(&mut self) -> Result<Predicate, SqlError> {
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

    fn negation(&mut self) -> Result<Predicate, SqlError> {
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

    fn predicate(&mut self) -> Result<Predicate, SqlError> {
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
        let next_text = &self.text[next.range.clone()];
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
    fn paren_is_operand(&self) -> bool {
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
                    let op = &self.text[t.range.clone()];
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
            t.kind == TokenKind::Operator && !matches!(&self.text[t.range.clone()], "&&")
        }) || after.is_some_and(|t| {
            is_any_word(self.text, t, words!["IS", "IN", "LIKE", "BETWEEN", "NOT"])
                && !is_word(self.text, t, "NOT")
        });
        followed_by_operator || !has_boolean
    }

    /// A value expression: tokens up to a comparison, a boolean keyword, a comma, a
    /// closing parenthesis or a clause boundary. Never fails; may be empty.
    fn operand(&mut self) -> Operand {
        let start_pos = self.pos;
        let mut operand = Operand::default();
        let mut count = 0;
        while let Some(t) = self.peek() {
            let text = &self.text[t.range.clone()];
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
                        while self
                            .peek()
                            .is_some_and(|t| &self.text[t.range.clone()] == "[")
                        {
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
                        self.skip_group();
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
                    let Some((parts, range)) = self.dotted_name() else {
                        self.pos += 1;
                        continue;
                    };
                    if self.at_kind(TokenKind::LParen) && parts.len() <= 3 {
                        let function = parts
                            .last()
                            .cloned()
                            .unwrap_or_default()
                            .to_ascii_lowercase();
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
                                    && self.text[a.range.clone()].eq_ignore_ascii_case(s)
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
                        let name = parts.last().cloned().unwrap_or_default();
                        let qualifier = (parts.len() >= 2).then(|| parts[parts.len() - 2].clone());
                        operand.columns.push(ColumnRef {
                            qualifier,
                            name,
                            range,
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
            operand.range = self.tokens[start_pos].range.start..self.tokens[self.pos - 1].range.end;
            let slice = &self.tokens[start_pos..self.pos];
            if let [only] = slice
                && only.kind == TokenKind::Number
            {
                operand.integer = self.text[only.range.clone()].parse().ok();
            }
            operand.increment_of = self.increment(slice);
        } else {
            let at = self.peek().map_or(self.text.len(), |t| t.range.start);
            operand.range = at..at;
        }
        operand
    }

    fn operand_ends_here(&self) -> bool {
        match self.peek() {
            None => true,
            Some(t) => match t.kind {
                TokenKind::Semicolon
                | TokenKind::BatchSeparator
                | TokenKind::RParen
                | TokenKind::Comma => true,
                TokenKind::Operator => matches!(
                    &self.text[t.range.clone()],
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
    fn increment(&self, slice: &[Token]) -> Option<ColumnRef> {
        let plus = slice
            .iter()
            .position(|t| t.kind == TokenKind::Operator && &self.text[t.range.clone()] == "+")?;
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
                range: side[0].range.start..last.range.end,
            })
        };
        let one = |side: &[Token]| matches!(side, [t] if t.kind == TokenKind::Number && &self.text[t.range.clone()] == "1");
        if one(right) {
            column_of(left)
        } else if one(left) {
            column_of(right)
        } else {
            None
        }
    }

    /// Inside `(`: scans the arguments up to the matching `)` into `operand`.
    fn call_arguments(&mut self, operand: &mut Operand) {
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

    fn call_arguments_inner(&mut self, operand: &mut Operand) {
        loop {
            let mut inner = self.operand();
            operand.columns.append(&mut inner.columns);
            operand.clock |= inner.clock;
            operand.parameter |= inner.parameter;
            operand.subquery |= inner.subquery;
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
            let mut parser = Parser {
                text,
                tokens,
                pos: i + 1,
                ctes: Vec::new(),
                cte_filters: Vec::new(),
                nesting: 0,
            };
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
