//! The method's SQL: read by each database it is sent to as that database reads it
//! (`fenced_sql`), checked, then cut where the fence goes and rendered per dialect with
//! numbered parameters and the table quoted.

use std::ops::Range;

use fenced_guard::__private::{Columns, FencedWrite};
use fenced_guard::FencedTable;
use fenced_sql::lex::{self, Lexed, Token, TokenKind};
use fenced_sql::{Reading, SqlError, StatementKind, UpdateShape, parse_update, parse_update_in};

/// A dialect, as the macro renders it (the runtime's `Dialect` has the same three).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dialect {
    Postgres,
    Sqlite,
    Mssql,
}

impl Dialect {
    pub(crate) const ALL: [Dialect; 3] = [Dialect::Postgres, Dialect::Sqlite, Dialect::Mssql];

    /// The runtime's name for it.
    pub(crate) fn guard(self) -> fenced_guard::Dialect {
        match self {
            Dialect::Postgres => fenced_guard::Dialect::Postgres,
            Dialect::Sqlite => fenced_guard::Dialect::Sqlite,
            Dialect::Mssql => fenced_guard::Dialect::Mssql,
        }
    }

    /// The reading's name for it.
    pub(crate) fn sql(self) -> fenced_sql::Dialect {
        match self {
            Dialect::Postgres => fenced_sql::Dialect::Postgres,
            Dialect::Sqlite => fenced_sql::Dialect::Sqlite,
            Dialect::Mssql => fenced_sql::Dialect::Mssql,
        }
    }

    /// Where it is in [`Dialect::ALL`].
    pub(crate) fn index(self) -> usize {
        match self {
            Dialect::Postgres => 0,
            Dialect::Sqlite => 1,
            Dialect::Mssql => 2,
        }
    }

    /// Its name in `dialect = "..."`.
    pub(crate) fn option(self) -> &'static str {
        match self {
            Dialect::Postgres => "postgres",
            Dialect::Sqlite => "sqlite",
            Dialect::Mssql => "mssql",
        }
    }

    /// The dialect named in `dialect = "..."`.
    pub(crate) fn from_option(name: &str) -> Option<Dialect> {
        Dialect::ALL.into_iter().find(|d| d.option() == name)
    }

    pub(crate) fn placeholder(self, n: usize) -> String {
        match self {
            Dialect::Postgres => format!("${n}"),
            Dialect::Sqlite => format!("?{n}"),
            Dialect::Mssql => format!("@P{n}"),
        }
    }

    fn quote(self, identifier: &str) -> String {
        match self {
            Dialect::Postgres | Dialect::Sqlite => format!("\"{identifier}\""),
            Dialect::Mssql => format!("[{identifier}]"),
        }
    }
}

/// The protocol's names the method is declared with.
#[derive(Clone, Debug)]
pub(crate) struct Declared {
    /// `name` or `schema.name`, validated.
    pub(crate) table: String,
    pub(crate) key: String,
    pub(crate) generation: String,
    pub(crate) owner: String,
    pub(crate) expiry: String,
    pub(crate) published: String,
    pub(crate) epoch: String,
    pub(crate) publish_once: bool,
    /// The one dialect the SQL is written for (`dialect = "..."`); `None`: all three.
    pub(crate) dialect: Option<Dialect>,
}

impl Declared {
    /// The dialects the SQL is rendered and checked for.
    fn targets(&self) -> impl Iterator<Item = Dialect> + '_ {
        Dialect::ALL
            .into_iter()
            .filter(|d| self.dialect.is_none_or(|only| only == *d))
    }
}

/// Which checks run. Both always do in the macro; the differential test switches them
/// off for its negative control.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Checks {
    /// The caller's text lies in the portable subset (`lex::portable_problems`), or, for
    /// a method that declares its one dialect, in that dialect's (`lex::dialect_problems`);
    /// and the macro's parser splits it into the same tokens as each database it is sent
    /// to.
    pub(crate) subset: bool,
    /// Each dialect's final statement, re-read by that dialect's lexer, carries the fence
    /// at its top level (`lex::check_fenced`, as `FencedSql::new` runs it).
    pub(crate) sent: bool,
    /// Each database's text is read, parsed and rendered as that database reads it
    /// (`fenced_sql::lex::lex_caller`); without it, by the tolerant reading of all three
    /// at once, as the macro once did.
    pub(crate) own_reading: bool,
}

impl Checks {
    pub(crate) const ALL: Checks = Checks {
        subset: true,
        sent: true,
        own_reading: true,
    };
}

/// The macro's reading of a method's SQL for one database: its tokens, and whose rules
/// the statement is parsed by.
pub(crate) struct Read {
    pub(crate) lexed: Lexed,
    pub(crate) reading: Reading,
}

/// Reads `sql` for `dialect`: as that database reads it (`own`), else tolerantly.
pub(crate) fn read(sql: &str, dialect: Dialect, own: bool) -> Result<Read, Problem> {
    if !own {
        return Ok(Read {
            lexed: lex::lex(sql),
            reading: Reading::Tolerant,
        });
    }
    let d = dialect.sql();
    match lex::lex_caller(d, sql) {
        Ok(lexed) => Ok(Read {
            lexed,
            reading: Reading::Dialect(d),
        }),
        Err(e) => Err(problem(
            e.range,
            format!("{}: {} cannot split this text", e.message, d.name()),
        )),
    }
}

/// Adds `p` to `problems` unless it is there already: each database's reading of a
/// portable text finds the same problems.
pub(crate) fn add(problems: &mut Vec<Problem>, p: Problem) {
    if !problems.contains(&p) {
        problems.push(p);
    }
}

/// Something wrong with the SQL, at a byte range of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Problem {
    pub(crate) range: Range<usize>,
    pub(crate) message: String,
}

/// The statement cut where the fence goes, in one dialect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Parts {
    pub(crate) head: String,
    pub(crate) middle: String,
    pub(crate) filter: Option<String>,
    pub(crate) tail: String,
}

/// A checked statement: its parts per dialect (in the order of [`Dialect::ALL`]), for
/// the dialects it is written for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Checked {
    pub(crate) parts: [Option<Parts>; 3],
}

/// What checking found: the statement, or every problem; and, either way, the value
/// parameters that no placeholder uses (by index).
#[derive(Debug)]
pub(crate) struct Outcome {
    pub(crate) result: Result<Checked, Vec<Problem>>,
    pub(crate) unused: Vec<usize>,
}

fn problem(range: Range<usize>, message: impl Into<String>) -> Problem {
    Problem {
        range,
        message: message.into(),
    }
}

/// Normalises a table name as written: quotes and brackets removed, case folded.
pub(crate) fn plain_name(text: &str) -> String {
    text.chars()
        .filter(|c| !matches!(c, '"' | '[' | ']' | '`') && !c.is_whitespace())
        .collect::<String>()
        .to_ascii_lowercase()
}

fn refusal(shape: &UpdateShape, table: &str) -> Option<String> {
    match shape.kind {
        Some(StatementKind::Update) => None,
        Some(StatementKind::Delete) => Some(format!(
            "`DELETE` is refused: deleting the fenced row destroys its generation, so the next \
             acquisition starts again from 0 and a stale lease can match again; \
             write an `UPDATE {table} SET ...` that marks the row instead (for example a `Deleted` column)"
        )),
        Some(StatementKind::Merge) => Some(format!(
            "`MERGE` is refused: its arms can insert or delete the fenced row and cannot carry one \
             top-level fence; provision the row once with `Store::provision`, then write it with \
             `UPDATE {table} SET ...`"
        )),
        Some(StatementKind::Insert) if !shape.assignments.is_empty() => Some(format!(
            "an upsert (`INSERT ... ON CONFLICT DO UPDATE`) is refused: its insert arm writes \
             without a fence and can recreate the row with a reset generation; provision the row \
             once with `Store::provision`, then write it with `UPDATE {table} SET ...`"
        )),
        Some(StatementKind::Insert) => Some(format!(
            "`INSERT` is refused: a fenced write changes the existing row under its lease; create \
             the row with `Store::provision`, then write it with `UPDATE {table} SET ...`"
        )),
        _ => Some(format!(
            "expected `UPDATE {table} SET ...`: a fenced write is exactly one UPDATE of the fenced table"
        )),
    }
}

/// Checks `sql` against the declared table and the method's value parameters (`params`,
/// by name, in order), and renders it per dialect.
pub(crate) fn check(sql: &str, declared: &Declared, method: &str, params: &[String]) -> Outcome {
    check_with(sql, declared, method, params, Checks::ALL)
}

/// [`check`], with the checks chosen.
pub(crate) fn check_with(
    sql: &str,
    declared: &Declared,
    method: &str,
    params: &[String],
    checks: Checks,
) -> Outcome {
    if checks.subset {
        let mut found = match declared.dialect {
            None => fenced_sql::portable::portable_problems(sql),
            Some(d) => fenced_sql::portable::dialect_problems(d.sql(), sql),
        };
        if found.is_empty() {
            found.extend(declared.targets().find_map(|d| disagreement(sql, d)));
        }
        if !found.is_empty() {
            // A statement that is not an UPDATE is explained as such first.
            if let Ok(shape) = parse_update(sql)
                && let Some(message) = refusal(&shape, &declared.table)
            {
                let at = shape.range.start..shape.range.start;
                return Outcome {
                    result: Err(vec![problem(first_word(sql, at), message)]),
                    unused: Vec::new(),
                };
            }
            return Outcome {
                result: Err(found
                    .into_iter()
                    .map(|p| problem(p.range, p.message))
                    .collect()),
                unused: Vec::new(),
            };
        }
    }
    let mut problems = Vec::new();
    let mut unused = Vec::new();
    let mut parts: [Option<Parts>; 3] = [None, None, None];
    for dialect in declared.targets() {
        let read = match read(sql, dialect, checks.own_reading) {
            Ok(read) => read,
            Err(p) => {
                add(&mut problems, p);
                continue;
            }
        };
        let (rendered, not_used) = check_reading(sql, &read, declared, method, params, dialect);
        unused = not_used;
        match rendered {
            Ok(p) => parts[dialect.index()] = Some(p),
            Err(found) => found.into_iter().for_each(|p| add(&mut problems, p)),
        }
    }
    if !problems.is_empty() {
        return Outcome {
            result: Err(problems),
            unused,
        };
    }
    let checked = Checked { parts };
    if checks.sent
        && let Err(message) = check_sent(&checked, declared, method, params.len())
    {
        return Outcome {
            result: Err(vec![problem(0..sql.len(), message)]),
            unused,
        };
    }
    Outcome {
        result: Ok(checked),
        unused,
    }
}

/// Checks `sql` as `read` reads it for `dialect`, and cuts and renders that dialect's
/// statement: its parts, or every problem; and, either way, the value parameters no
/// placeholder uses (by index).
fn check_reading(
    sql: &str,
    read: &Read,
    declared: &Declared,
    method: &str,
    params: &[String],
    dialect: Dialect,
) -> (Result<Parts, Vec<Problem>>, Vec<usize>) {
    let tokens = &read.lexed.tokens;
    let mut problems = Vec::new();

    let (numbered, unused) = placeholders(sql, tokens, method, params, &mut problems);

    let shape = match parse_update_in(read.reading, sql, tokens) {
        Ok(shape) => shape,
        Err(error) => {
            problems.push(problem(
                error.range,
                format!("cannot parse the SQL: {}", error.message),
            ));
            return (Err(problems), unused);
        }
    };
    if let Some(message) = refusal(&shape, &declared.table) {
        // At the statement's first word, which names what it is.
        let keyword = tokens
            .iter()
            .find(|t| t.range().start >= shape.range.start)
            .map_or(shape.range.clone(), |t| t.range());
        problems.push(problem(keyword, message));
        return (Err(problems), unused);
    }
    let first = tokens
        .iter()
        .position(|t| t.range().start >= shape.range.start)
        .unwrap_or(0);
    if !is_word(sql, &tokens[first], "UPDATE") {
        problems.push(problem(
            tokens[first].range(),
            "a statement that starts before its `UPDATE` (a `WITH` list) is not supported: write \
             the `UPDATE` of the fenced table directly",
        ));
    }

    let target = match &shape.target {
        Some((text, range)) => {
            if plain_name(text) != declared.table.to_ascii_lowercase() {
                problems.push(problem(
                    range.clone(),
                    format!(
                        "this UPDATE writes `{text}`, but the attribute declares `table = \"{}\"`: \
                         a `#[fenced_write]` method writes only its fenced table",
                        declared.table
                    ),
                ));
            }
            range.clone()
        }
        None => {
            problems.push(problem(shape.range.clone(), "expected the UPDATE's table"));
            0..0
        }
    };

    for assignment in &shape.assignments {
        let column = assignment.column.as_str();
        let is = |name: &str| column.eq_ignore_ascii_case(name);
        let message = if is(&declared.generation)
            || is(&declared.owner)
            || is(&declared.expiry)
            || is(&declared.epoch)
        {
            Some(format!(
                "`{column}` belongs to the fencing protocol (only the guard's own statements \
                 set it, the fence checks it): remove this assignment"
            ))
        } else if is(&declared.key) {
            Some(format!(
                "`{column}` is the fenced row's key: changing it would move the row away from the \
                 lease that covers it; remove this assignment"
            ))
        } else if is(&declared.published) && declared.publish_once {
            Some(format!(
                "`{column}` is set to the lease's generation by `publish_once`: remove this \
                 assignment"
            ))
        } else if is(&declared.published) {
            Some(format!(
                "`{column}` may only be set through the publish-once option: add `publish_once` \
                 to the attribute, which sets it to the lease's generation and refuses a second \
                 publication by the same generation, and remove this assignment"
            ))
        } else {
            None
        };
        if let Some(message) = message {
            problems.push(problem(assignment.column_range.clone(), message));
        }
    }

    // RETURNING / OUTPUT: the method returns whether the write applied, not rows.
    let statement_tokens: Vec<&Token> = tokens
        .iter()
        .filter(|t| t.range().start >= shape.range.start && t.range().end <= shape.range.end)
        .collect();
    let mut depth = 0usize;
    let mut ordered = false;
    for (n, token) in statement_tokens.iter().enumerate() {
        let next_is = |word: &str| {
            statement_tokens
                .get(n + 1)
                .is_some_and(|t| is_word(sql, t, word))
        };
        let refused = if n == 0 && next_is("OR") {
            Some(
                "`UPDATE OR ...` is refused: SQLite's conflict clause (`OR REPLACE` deletes the \
                 rows a new value collides with) acts on rows the fence does not cover; write \
                 `UPDATE <table> SET ...`",
            )
        } else if is_word(sql, token, "CURRENT") && next_is("OF") {
            Some(
                "`WHERE CURRENT OF` is refused: a cursor position cannot be combined with the \
                 fence; select the row by its key in the `WHERE`",
            )
        } else if depth == 0 && is_word(sql, token, "OPTION") {
            Some(
                "`OPTION (...)` is refused: it ends a SQL Server statement, so the fence \
                 appended to the `WHERE` would follow it; remove the query hint",
            )
        } else if depth == 0
            && !ordered
            && (is_word(sql, token, "LIMIT") || (is_word(sql, token, "ORDER") && next_is("BY")))
        {
            ordered = true;
            Some(
                "`ORDER BY`/`LIMIT` in an `UPDATE` is SQLite-only and would follow the fence: \
                 remove it (a fenced write changes one row)",
            )
        } else {
            None
        };
        if let Some(message) = refused {
            problems.push(problem(token.range(), message));
        }
        match token.kind {
            TokenKind::LParen => depth += 1,
            TokenKind::RParen => depth = depth.saturating_sub(1),
            _ if depth == 0
                && (is_word(sql, token, "RETURNING") || is_word(sql, token, "OUTPUT")) =>
            {
                problems.push(problem(
                    token.range(),
                    format!(
                        "`{}` is not supported: the method returns whether the write applied \
                         (`Outcome`), not rows; read the row afterwards if you need it",
                        &sql[token.range()]
                    ),
                ));
            }
            _ => {}
        }
    }

    if !problems.is_empty() {
        return (Err(problems), unused);
    }

    let set_end = shape
        .assignments
        .last()
        .map_or(shape.range.end, |a| a.value_range.end);
    let (where_keyword, filter) = match &shape.where_range {
        Some(range) => {
            let keyword = statement_tokens
                .iter()
                .rev()
                .find(|t| t.range().end <= range.start && is_word(sql, t, "WHERE"))
                .map_or(range.start, |t| t.range().start);
            (keyword, Some(range.clone()))
        }
        None => (shape.range.end, None),
    };
    let render = |range: Range<usize>| {
        render(
            sql,
            &statement_tokens,
            range,
            &target,
            &declared.table,
            &numbered,
            dialect,
        )
    };
    let middle = render(set_end..where_keyword);
    let parts = Parts {
        head: render(shape.range.start..set_end),
        middle: if middle.is_empty() {
            middle
        } else {
            format!(" {middle}")
        },
        filter: filter.clone().map(render),
        tail: filter
            .as_ref()
            .map(|f| render(f.end..shape.range.end))
            .filter(|t| !t.is_empty())
            .map(|t| format!(" {t}"))
            .unwrap_or_default(),
    };
    (Ok(parts), unused)
}

/// The `@name` placeholders of `sql`, each numbered by the position of its parameter
/// in `params` (from 1), and the parameters no placeholder uses (by index). A
/// placeholder that names no parameter, or a positional one, is a problem.
pub(crate) fn placeholders(
    sql: &str,
    tokens: &[Token],
    method: &str,
    params: &[String],
    problems: &mut Vec<Problem>,
) -> (Vec<(Range<usize>, usize)>, Vec<usize>) {
    // Placeholders: each must name a value parameter; every value parameter must be used.
    let mut used = vec![false; params.len()];
    let mut numbered: Vec<(Range<usize>, usize)> = Vec::new();
    for token in tokens.iter().filter(|t| t.kind == TokenKind::Parameter) {
        let text = &sql[token.range()];
        if text.starts_with("@@") {
            continue;
        }
        let Some(name) = text.strip_prefix('@') else {
            problems.push(problem(
                token.range(),
                format!(
                    "`{text}` is a positional parameter: write a named placeholder `@name` for a \
                 parameter of `{method}`, and the macro numbers it for each database"
                ),
            ));
            continue;
        };
        match params.iter().position(|p| p == name) {
            Some(i) => {
                used[i] = true;
                numbered.push((token.range(), i + 1));
            }
            None => {
                let known = if params.is_empty() {
                    format!("`{method}` has no value parameters")
                } else {
                    let list: Vec<String> = params.iter().map(|p| format!("`@{p}`")).collect();
                    format!("the placeholders it can bind are {}", list.join(", "))
                };
                problems.push(problem(
                    token.range(),
                    format!(
                        "`{text}` is not a parameter of `{method}`: add a parameter `{name}` to \
                     the method or fix the name ({known}); the lease's key, generation and \
                     owner are bound by the fence itself"
                    ),
                ));
            }
        }
    }
    let unused = (0..params.len()).filter(|&i| !used[i]).collect();
    (numbered, unused)
}

/// The declared table, with the guard's defaults for everything not declared.
pub(crate) fn declared_table(declared: &Declared) -> Result<FencedTable, String> {
    FencedTable::builder()
        .table(&declared.table)
        .key_column(&declared.key)
        .generation_column(&declared.generation)
        .owner_column(&declared.owner)
        .expiry_column(&declared.expiry)
        .published_column(&declared.published)
        .epoch_column(&declared.epoch)
        .build()
        .map_err(|e| e.to_string())
}

fn leak(text: &str) -> &'static str {
    Box::leak(text.to_owned().into_boxed_str())
}

/// The guard's write for `checked` (leaked: the macro runs once per method, the
/// differential test once per text).
pub(crate) fn write(
    checked: &Checked,
    declared: &Declared,
    method: &str,
    params: usize,
) -> &'static FencedWrite {
    let parts = checked.parts.each_ref().map(|p| {
        p.as_ref().map(|p| fenced_guard::__private::Parts {
            head: leak(&p.head),
            middle: leak(&p.middle),
            filter: p.filter.as_deref().map(leak),
            tail: leak(&p.tail),
        })
    });
    Box::leak(Box::new(FencedWrite::new(
        leak(method),
        Columns {
            table: leak(&declared.table),
            key: leak(&declared.key),
            generation: leak(&declared.generation),
            owner: leak(&declared.owner),
            expiry: leak(&declared.expiry),
            published: leak(&declared.published),
        },
        parts,
        params,
        declared.publish_once,
    )))
}

/// Renders each dialect's final statement exactly as the guard will, for the declared
/// table, and re-reads it with that dialect's lexer (`FencedSql::new`).
fn check_sent(
    checked: &Checked,
    declared: &Declared,
    method: &str,
    params: usize,
) -> Result<(), String> {
    let table = declared_table(declared)?;
    write(checked, declared, method, params)
        .fenced_sql(&table)
        .map(drop)
        .map_err(|e| {
            format!(
                "the statement rendered from this SQL would not carry the fence at its top \
                 level, so it is refused: {e}"
            )
        })
}

/// Where `dialect`'s server splits `sql` differently from the tolerant reading, if it
/// does: the first token or comment that differs in extent or in kind. The macro parses
/// and renders each database's text as that database reads it, and accepts only a text
/// that every reader splits alike: the plain forms, whose meaning does not hang on a
/// database's own operators, quotes or comments (`a ?| b`, `U&"x"` on SQLite).
pub(crate) fn disagreement(sql: &str, dialect: Dialect) -> Option<SqlError> {
    let theirs = lex::lex_caller(dialect.sql(), sql).ok()?;
    let ours = &lex::lex(sql);
    // (extent, kind), comments as `None`, in order; what only the tolerant reading
    // makes, as what the databases make of it.
    let entries = |lexed: &Lexed| {
        let mut entries: Vec<(Range<usize>, Option<TokenKind>)> = lexed
            .tokens
            .iter()
            .map(|t| {
                let kind = match t.kind {
                    TokenKind::BatchSeparator => TokenKind::Word,
                    TokenKind::Placeholder => TokenKind::Other,
                    kind => kind,
                };
                (t.range(), Some(kind))
            })
            .chain(lexed.comments.iter().map(|c| (c.range.clone(), None)))
            .collect();
        entries.sort_by_key(|(r, _)| r.start);
        entries
    };
    let (theirs, ours) = (entries(&theirs), entries(ours));
    let at = theirs
        .iter()
        .zip(&ours)
        .position(|(a, b)| a != b)
        .or((theirs.len() != ours.len()).then(|| theirs.len().min(ours.len())))?;
    let range = theirs
        .get(at)
        .or(ours.get(at))
        .map_or(0..sql.len(), |(r, _)| r.clone());
    Some(SqlError::new(
        range.clone(),
        format!(
            "{} reads this text differently from the macro at `{}`, so what is sent \
             would not mean what is written: write the plain form (a quoted \"name\", a \
             '...' string, spaces between operators)",
            dialect.sql().name(),
            &sql[range]
        ),
    ))
}

/// The range of the first word at or after `at`.
fn first_word(sql: &str, at: Range<usize>) -> Range<usize> {
    let start = at.start;
    let rest = &sql[start..];
    let skip = rest.len() - rest.trim_start().len();
    let word = rest[skip..]
        .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .unwrap_or(rest.len() - skip);
    start + skip..start + skip + word
}

pub(crate) fn is_word(sql: &str, token: &Token, word: &str) -> bool {
    token.kind == TokenKind::Word && sql[token.range()].eq_ignore_ascii_case(word)
}

/// The tokens inside `range`, joined by one space wherever the SQL had whitespace or a
/// comment between them (so no comment can swallow what is appended), with the target
/// table quoted and placeholders numbered for `dialect`.
pub(crate) fn render(
    sql: &str,
    tokens: &[&Token],
    range: Range<usize>,
    target: &Range<usize>,
    table: &str,
    numbered: &[(Range<usize>, usize)],
    dialect: Dialect,
) -> String {
    let mut out = String::new();
    let mut previous_end: Option<usize> = None;
    for token in tokens
        .iter()
        .filter(|t| t.range().start >= range.start && t.range().end <= range.end)
    {
        let inside_target = token.range().start >= target.start
            && token.range().end <= target.end
            && target.start < target.end;
        if inside_target && token.range().start != target.start {
            previous_end = Some(token.range().end);
            continue;
        }
        if let Some(end) = previous_end
            && end < token.range().start
        {
            out.push(' ');
        }
        if inside_target {
            let quoted: Vec<String> = table.split('.').map(|p| dialect.quote(p)).collect();
            out.push_str(&quoted.join("."));
        } else if let Some((_, n)) = numbered.iter().find(|(r, _)| *r == token.range()) {
            out.push_str(&dialect.placeholder(*n));
        } else if let Some(name) = (dialect == Dialect::Mssql
            && token.kind == TokenKind::QuotedIdent)
            .then(|| sql[token.range()].strip_prefix('"')?.strip_suffix('"'))
            .flatten()
        {
            // SQL Server reads `"x"` as a string when a session has QUOTED_IDENTIFIER
            // off; brackets are a name in every session.
            out.push('[');
            out.push_str(&name.replace("\"\"", "\"").replace(']', "]]"));
            out.push(']');
        } else {
            out.push_str(&sql[token.range()]);
        }
        previous_end = Some(token.range().end);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared(publish_once: bool) -> Declared {
        Declared {
            table: "dbo.Article".into(),
            key: "ReportId".into(),
            generation: "Generation".into(),
            owner: "LeaseOwner".into(),
            expiry: "LeaseUntilUtc".into(),
            published: "PublishedGeneration".into(),
            epoch: "LeaseEpoch".into(),
            publish_once,
            dialect: None,
        }
    }

    fn params(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    fn parts(sql: &str, names: &[&str]) -> [Parts; 3] {
        let outcome = check(sql, &declared(false), "save", &params(names));
        assert!(outcome.unused.is_empty(), "{:?}", outcome.unused);
        outcome
            .result
            .expect("the statement is accepted")
            .parts
            .map(|p| p.expect("rendered for every dialect"))
    }

    fn problems(sql: &str, names: &[&str], publish_once: bool) -> Vec<(String, String)> {
        let outcome = check(sql, &declared(publish_once), "save", &params(names));
        outcome
            .result
            .expect_err("the statement is refused")
            .into_iter()
            .map(|p| (sql[p.range].to_owned(), p.message))
            .collect()
    }

    #[test]
    fn renders_the_three_dialects() {
        let [pg, lite, ms] = parts(
            "UPDATE dbo.Article SET Payload = @payload WHERE Draft = @draft OR Kind = @payload",
            &["payload", "draft"],
        );
        assert_eq!(pg.head, "UPDATE \"dbo\".\"Article\" SET Payload = $1");
        assert_eq!(pg.filter.as_deref(), Some("Draft = $2 OR Kind = $1"));
        assert_eq!(lite.head, "UPDATE \"dbo\".\"Article\" SET Payload = ?1");
        assert_eq!(lite.filter.as_deref(), Some("Draft = ?2 OR Kind = ?1"));
        assert_eq!(ms.head, "UPDATE [dbo].[Article] SET Payload = @P1");
        assert_eq!(ms.filter.as_deref(), Some("Draft = @P2 OR Kind = @P1"));
        for p in [&pg, &lite, &ms] {
            assert_eq!(p.middle, "");
            assert_eq!(p.tail, "");
        }
    }

    #[test]
    fn quoted_names_are_bracketed_for_sql_server() {
        let [pg, _, ms] = parts(
            "UPDATE dbo.Article SET \"Pay load\" = @a WHERE \"a\"\"]b\" = 1",
            &["a"],
        );
        assert_eq!(pg.head, "UPDATE \"dbo\".\"Article\" SET \"Pay load\" = $1");
        assert_eq!(ms.head, "UPDATE [dbo].[Article] SET [Pay load] = @P1");
        assert_eq!(ms.filter.as_deref(), Some("[a\"]]b] = 1"));
    }

    #[test]
    fn numbers_by_parameter_order_not_by_appearance() {
        let [pg, ..] = parts("UPDATE \"dbo\".\"Article\" SET A = @b, B = @a", &["a", "b"]);
        assert_eq!(pg.head, "UPDATE \"dbo\".\"Article\" SET A = $2, B = $1");
        assert_eq!(pg.filter, None);
    }

    #[test]
    fn comments_cannot_swallow_the_fence() {
        let [pg, ..] = parts(
            "UPDATE dbo.Article\n  SET Payload = @payload -- the body\n  WHERE Draft = 1 -- drafts only",
            &["payload"],
        );
        assert_eq!(pg.head, "UPDATE \"dbo\".\"Article\" SET Payload = $1");
        assert_eq!(pg.middle, "");
        assert_eq!(pg.filter.as_deref(), Some("Draft = 1"));
        assert_eq!(pg.tail, "");
    }

    #[test]
    fn keeps_strings_and_from_clauses() {
        let [pg, _, ms] = parts(
            "UPDATE dbo.Article SET Payload = 'a -- @x' FROM Other o WHERE o.Id = @id",
            &["id"],
        );
        assert_eq!(
            pg.head,
            "UPDATE \"dbo\".\"Article\" SET Payload = 'a -- @x'"
        );
        assert_eq!(pg.middle, " FROM Other o");
        assert_eq!(ms.filter.as_deref(), Some("o.Id = @P1"));
    }

    #[test]
    fn finds_the_top_level_where_past_subqueries() {
        let [pg, ..] = parts(
            "UPDATE dbo.Article SET Total = (SELECT SUM(n) FROM Lines WHERE Lines.Id = @id) \
             WHERE Kind = @kind",
            &["id", "kind"],
        );
        assert_eq!(
            pg.head,
            "UPDATE \"dbo\".\"Article\" SET Total = (SELECT SUM(n) FROM Lines WHERE Lines.Id = $1)"
        );
        assert_eq!(pg.filter.as_deref(), Some("Kind = $2"));
        let [pg, ..] = parts(
            "UPDATE dbo.Article SET Total = (SELECT SUM(n) FROM Lines WHERE Lines.Id = @id)",
            &["id"],
        );
        assert_eq!(pg.filter, None);
        assert_eq!(pg.middle, "");
    }

    #[test]
    fn reports_every_placeholder_mismatch() {
        let outcome = check(
            "UPDATE dbo.Article SET Payload = @payloda WHERE Draft = @drfat",
            &declared(false),
            "save",
            &params(&["payload", "draft"]),
        );
        assert_eq!(outcome.unused, [0, 1]);
        let problems = outcome.result.unwrap_err();
        assert_eq!(problems.len(), 2);
        assert!(
            problems[0]
                .message
                .starts_with("`@payloda` is not a parameter of `save`")
        );
        assert!(
            problems[1]
                .message
                .starts_with("`@drfat` is not a parameter of `save`")
        );
    }

    #[test]
    fn refuses_protocol_columns() {
        let found = problems(
            "UPDATE dbo.Article SET Generation = 0, r.LeaseOwner = NULL, \
             \"LeaseUntilUtc\" = NULL, LeaseEpoch = 0, ReportId = NULL, PublishedGeneration = 1, Payload = 'x'",
            &[],
            false,
        );
        let columns: Vec<&str> = found.iter().map(|(c, _)| c.as_str()).collect();
        assert_eq!(
            columns,
            [
                "Generation",
                "r.LeaseOwner",
                "\"LeaseUntilUtc\"",
                "LeaseEpoch",
                "ReportId",
                "PublishedGeneration"
            ]
        );
        assert!(found[5].1.contains("add `publish_once`"));
        let with_option = problems("UPDATE dbo.Article SET PublishedGeneration = 1", &[], true);
        assert!(
            with_option[0]
                .1
                .contains("set to the lease's generation by `publish_once`")
        );
    }

    #[test]
    fn refuses_other_statements_and_tables() {
        let cases = [
            (
                "DELETE FROM dbo.Article WHERE ReportId = 1",
                "`DELETE` is refused",
            ),
            (
                "MERGE dbo.Article AS t USING s ON t.ReportId = s.ReportId \
                 WHEN MATCHED THEN UPDATE SET Payload = s.Payload;",
                "`MERGE` is refused",
            ),
            (
                "INSERT INTO dbo.Article (ReportId) VALUES (1) \
                 ON CONFLICT (ReportId) DO UPDATE SET Payload = 'x'",
                "an upsert",
            ),
            (
                "INSERT INTO dbo.Article (ReportId) VALUES (1)",
                "`INSERT` is refused",
            ),
            ("SELECT 1", "expected `UPDATE dbo.Article SET ...`"),
            (
                "UPDATE dbo.Other SET Payload = 'x'",
                "this UPDATE writes `dbo.Other`",
            ),
            (
                "UPDATE Article SET Payload = 'x'",
                "this UPDATE writes `Article`",
            ),
            (
                "UPDATE dbo.Article SET Payload = $1",
                "`$1` is a PostgreSQL placeholder",
            ),
            (
                "UPDATE dbo.Article SET Payload = 'x' WHERE CURRENT OF c",
                "`WHERE CURRENT OF` is refused",
            ),
            (
                "UPDATE OR REPLACE dbo.Article SET Payload = 'x'",
                "`UPDATE OR ...` is refused",
            ),
            (
                "UPDATE dbo.Article SET Payload = 'x' WHERE Draft = 1 OPTION (MAXDOP 1)",
                "`OPTION (...)` is refused",
            ),
            (
                "UPDATE dbo.Article SET Payload = 'x' WHERE Draft = 1 ORDER BY Draft LIMIT 1",
                "`ORDER BY`/`LIMIT`",
            ),
            (
                "UPDATE dbo.Article SET Payload = 'x' RETURNING Generation",
                "`RETURNING` is not supported",
            ),
            (
                "UPDATE dbo.Article Payload = 'x'",
                "cannot parse the SQL: expected SET",
            ),
            (
                "UPDATE dbo.Article SET Payload = 'x'; DELETE FROM t",
                "`;`: a fenced write is exactly one statement",
            ),
        ];
        for (sql, expected) in cases {
            let found = problems(sql, &[], false);
            assert!(
                found.iter().any(|(_, m)| m.starts_with(expected)),
                "{sql}: {found:?}"
            );
        }
    }

    #[test]
    fn one_dialect_renders_and_checks_only_its_statement() {
        let only = |d: Dialect| Declared {
            dialect: Some(d),
            ..declared(false)
        };
        let sql = "UPDATE dbo.Article SET Payload = $$it's$$ || @p WHERE N::bigint > 0";
        let outcome = check(sql, &only(Dialect::Postgres), "save", &params(&["p"]));
        let [pg, lite, ms] = outcome.result.expect("accepted for PostgreSQL").parts;
        let pg = pg.expect("rendered for PostgreSQL");
        assert_eq!(
            pg.head,
            "UPDATE \"dbo\".\"Article\" SET Payload = $$it's$$ || $1"
        );
        assert_eq!(pg.filter.as_deref(), Some("N::bigint > 0"));
        assert_eq!((lite, ms), (None, None));
        // The same text, for all three or for another one, is refused.
        for declared in [declared(false), only(Dialect::Sqlite), only(Dialect::Mssql)] {
            let outcome = check(sql, &declared, "save", &params(&["p"]));
            assert!(outcome.result.is_err(), "{:?}", declared.dialect);
        }
        let outcome = check(
            "UPDATE dbo.Article SET [Pay load] = N'x', N += 1 WHERE [a]]b] = @p",
            &only(Dialect::Mssql),
            "save",
            &params(&["p"]),
        );
        let [_, _, ms] = outcome.result.expect("accepted for SQL Server").parts;
        let ms = ms.expect("rendered for SQL Server");
        assert_eq!(
            ms.head,
            "UPDATE [dbo].[Article] SET [Pay load] = N'x', N += 1"
        );
        assert_eq!(ms.filter.as_deref(), Some("[a]]b] = @P1"));
        // A protocol column in the dialect's own quoting is still refused.
        let found = check(
            "UPDATE dbo.Article SET `LeaseOwner` = NULL",
            &only(Dialect::Sqlite),
            "save",
            &[],
        )
        .result
        .unwrap_err();
        assert!(found[0].message.contains("fencing protocol"), "{found:?}");
    }

    /// The README's table of the subset: which forms a method that declares its one
    /// dialect may use there.
    #[test]
    fn each_dialect_alone_accepts_its_own_forms() {
        use Dialect::{Mssql as M, Postgres as P, Sqlite as S};
        let cases: &[(&str, &[Dialect])] = &[
            ("'it''s'", &[P, S, M]),
            ("\"a b\" + 1.5e3 - .5", &[P, S, M]),
            ("1x", &[]),
            ("?", &[]),
            ("$x", &[]),
            ("1 -- x\r+ 1", &[]),
            ("1 /* open", &[]),
            ("$t$a$t$", &[P]),
            ("$a", &[]),
            ("a == b", &[]),
            ("a <@ b", &[P]),
            ("a ~ b", &[P, S, M]),
            ("→", &[]),
            ("'a\\b'", &[S, M]),
            ("'a'\n'b'", &[]),
            ("0x10", &[S, M]),
            ("1_000", &[]),
            ("$1", &[]),
            ("?1", &[]),
            (":x", &[]),
            ("@@x", &[]),
            ("#x", &[M]),
            ("a::int", &[P, M]),
            ("a || b", &[P, S, M]),
            ("a !=-1", &[]),
            ("a /* /* */ */", &[P, M]),
            ("[a]", &[S, M]),
            ("[a]]b]", &[M]),
            ("`a`", &[S]),
            ("U&\"a\"", &[]),
            ("U&'a'", &[S, M]),
            ("E'a\\'b'", &[P]),
            ("N'a'", &[P, M]),
            ("X'00'", &[P, S]),
            ("B'01'", &[P]),
            ("$$a$$", &[P]),
            ("é", &[P, S, M]),
            ("1; SELECT 1", &[]),
            ("1\nGO\n", &[]),
        ];
        for (value, alone) in cases {
            let sql = format!("UPDATE dbo.Article SET Payload = {value}");
            for d in Dialect::ALL {
                let declared = Declared {
                    dialect: Some(d),
                    ..declared(false)
                };
                let outcome = check(&sql, &declared, "save", &[]);
                assert_eq!(
                    outcome.result.is_ok(),
                    alone.contains(&d),
                    "{d:?}: {sql}: {:?}",
                    outcome.result
                );
            }
        }
    }

    #[test]
    fn refuses_what_the_macro_cannot_read_as_the_database_does() {
        let found = check(
            "UPDATE dbo.Article SET U&\"Payload\" = 'x'",
            &Declared {
                dialect: Some(Dialect::Postgres),
                ..declared(false)
            },
            "save",
            &[],
        )
        .result
        .unwrap_err();
        assert!(
            found[0].message.contains("Unicode-escaped name"),
            "{found:?}"
        );
        // The tolerant reading differs from SQLite's where comments nest, and where a
        // name is PostgreSQL's Unicode-escaped one.
        assert_eq!(
            disagreement("a = 'x' /* y */ -- z\n", Dialect::Sqlite),
            None
        );
        assert!(disagreement("a = '' /* /* */ */", Dialect::Sqlite).is_some());
        assert!(disagreement("a = U&\"x\"", Dialect::Sqlite).is_some());
    }

    #[test]
    fn accepts_quoted_and_differently_cased_table() {
        for sql in [
            "UPDATE \"dbo\".\"Article\" SET Payload = 'x'",
            "update \"dbo\".\"article\" set Payload = 'x'",
        ] {
            let outcome = check(sql, &declared(false), "save", &[]);
            assert!(outcome.result.is_ok(), "{sql}");
        }
    }

    #[test]
    fn a_parameter_with_non_ascii_letters_binds() {
        let [postgres, ..] = parts("UPDATE dbo.Article SET Size = @größe", &["größe"]);
        assert!(postgres.head.ends_with("Size = $1"), "{}", postgres.head);
        // The control: the placeholder is read whole, so a name that differs is named
        // whole in the error.
        let refused = problems("UPDATE dbo.Article SET Size = @größe", &["grosse"], false);
        assert_eq!(refused[0].0, "@größe", "{refused:?}");
        assert!(refused[0].1.contains("is not a parameter"), "{refused:?}");
    }

    #[test]
    fn the_rendered_write_names_the_method() {
        let declared = declared(false);
        let outcome = check(
            "UPDATE dbo.Article SET Size = @size",
            &declared,
            "save_size",
            &params(&["size"]),
        );
        let write = write(&outcome.result.unwrap(), &declared, "save_size", 1);
        let other = FencedTable::builder().table("Other").build().unwrap();
        let error = write
            .sql_for(&other, fenced_guard::Dialect::Postgres)
            .unwrap_err();
        assert!(error.to_string().contains("`save_size`"), "{error}");
    }
}
