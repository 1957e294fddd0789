//! SQL analysis: a total lexer, a tolerant statement parser, and the statement shape
//! used by both the lint's rules and the `#[fenced_write]` macro.

pub mod expr;
pub mod lexer;
pub mod parse;
pub mod shape;
mod words;

pub use expr::{ColumnRef, CompareOp, Operand, Predicate};
pub use parse::{
    Assignment, Grant, InsertPart, ParamStyle, SqlError, Statement, StatementKind, TableName,
    UpdateArm,
};
pub use shape::{Placeholder, SetShape, UpdateShape, parse_update};

use std::ops::Range;

/// One write or grant found in a SQL text, parsed or not.
#[derive(Debug, Clone)]
pub struct Analysed {
    /// The kind its keyword announces.
    pub kind: StatementKind,
    /// Byte range of its first keyword.
    pub keyword: Range<usize>,
    /// The parsed statement, or why it could not be parsed together with the byte range
    /// the statement spans as far as it could be followed and the tables named there.
    pub result: Result<Statement, (SqlError, Range<usize>, Vec<TableName>)>,
    /// The first keyword begins the text, or follows anything but a word, or follows a
    /// keyword that opens or closes a block (`BEGIN`, `THEN`, `AS`...). Prose in a Rust
    /// string ("cannot update ReportPublication") fails this test; SQL almost never does.
    pub at_statement_start: bool,
}

const BLOCK_WORDS: &[&str] = &[
    "BEGIN",
    "THEN",
    "ELSE",
    "AS",
    "DO",
    "LOOP",
    "END",
    "TRY",
    "CATCH",
    "TRAN",
    "TRANSACTION",
];

fn at_statement_start(text: &str, tokens: &[lexer::Token], first: usize) -> bool {
    let Some(prev) = first.checked_sub(1).map(|p| &tokens[p]) else {
        return true;
    };
    prev.kind != lexer::TokenKind::Word
        || BLOCK_WORDS
            .iter()
            .any(|w| text[prev.range()].eq_ignore_ascii_case(w))
}

/// How far an unparseable statement is followed for the tables it names.
const MAX_UNPARSED_TOKENS: usize = 200;

/// Finds and parses every `UPDATE`, `DELETE`, `MERGE`, `INSERT`, `GRANT` and `TRUNCATE`
/// in `text`, in order.
pub fn analyse(text: &str) -> Vec<Analysed> {
    let lexed = lexer::lex(text);
    analyse_tokens(text, &lexed.tokens)
}

/// [`analyse`] over tokens already lexed.
pub fn analyse_tokens(text: &str, tokens: &[lexer::Token]) -> Vec<Analysed> {
    analyse_found(text, tokens, parse::find_statements(text, tokens), None).collect()
}

/// [`analyse`] over a text already lexed, using the statement keywords the lexer noted,
/// one statement at a time. An `INSERT` is parsed only as far as `wanted` says its
/// analysis needs (see [`parse::parse_found_for`]).
pub(crate) fn analyse_lexed<'a, 'w: 'a>(
    text: &'a str,
    lexed: &'a lexer::Lexed,
    wanted: &'a parse::Wanted<'w>,
) -> impl Iterator<Item = Analysed> + 'a {
    let tokens = &lexed.tokens;
    let keywords = lexed.marks.statement_words.iter().copied();
    let found = parse::find_statements_at(text, tokens, keywords);
    analyse_found(text, tokens, found, Some(wanted))
}

fn analyse_found<'a, 'w: 'a>(
    text: &'a str,
    tokens: &'a [lexer::Token],
    found: Vec<parse::Found>,
    wanted: Option<&'a parse::Wanted<'w>>,
) -> impl Iterator<Item = Analysed> + 'a {
    found.into_iter().map(move |found| {
        let keyword = tokens[found.first].range();
        let result = parse::parse_found_for(text, tokens, &found, wanted).map_err(|error| {
            // How far the statement reaches: up to `;`, `GO` or the next found keyword.
            let end = tokens[found.keyword..]
                .iter()
                .skip(1)
                .take(MAX_UNPARSED_TOKENS)
                .position(|t| {
                    matches!(
                        t.kind,
                        lexer::TokenKind::Semicolon | lexer::TokenKind::BatchSeparator
                    )
                })
                .map_or(tokens.len(), |p| found.keyword + 1 + p);
            let end = end
                .min(found.keyword + MAX_UNPARSED_TOKENS)
                .min(tokens.len());
            let slice = &tokens[found.first..end];
            let mut mentioned = parse::tables_in(text, slice);
            // The word after the keyword is the most likely target.
            mentioned.extend(
                slice
                    .iter()
                    .filter(|t| {
                        matches!(
                            t.kind,
                            lexer::TokenKind::Word
                                | lexer::TokenKind::QuotedIdent
                                | lexer::TokenKind::Placeholder
                        )
                    })
                    .map(|t| TableName {
                        schema: None,
                        name: lexer::ident_text(text, t).to_owned(),
                        range: t.range(),
                    }),
            );
            let range = keyword.start..slice.last().map_or(keyword.end, |t| t.range().end);
            (error, range, mentioned)
        });
        Analysed {
            kind: found.kind,
            keyword,
            result,
            at_statement_start: at_statement_start(text, tokens, found.first),
        }
    })
}

/// How far back from a string literal [`executed_strings`] looks for what executes it.
const MAX_EXPRESSION_TOKENS: usize = 512;

/// Functions whose string arguments end up in the text they return, so a string inside
/// one of them is executed when its result is (`EXECUTE format('UPDATE %I ...', t)`).
const STRING_FUNCTIONS: &[&str] = &[
    "format",
    "concat",
    "concat_ws",
    "replace",
    "cast",
    "convert",
    "quotename",
    "quote_ident",
    "quote_literal",
    "quote_nullable",
    "coalesce",
    "isnull",
    "ltrim",
    "rtrim",
    "trim",
    "upper",
    "lower",
];

/// Whether `token` is `EXEC`, `EXECUTE`, `sp_executesql` or `[sp_executesql]`.
fn executes(text: &str, token: &lexer::Token) -> bool {
    lexer::executes(token.kind, &text.as_bytes()[token.range()])
}

/// The variable whose value the executing token at `i` executes: `EXEC (@sql)`, `EXEC
/// sp_executesql @sql`, `EXECUTE sp_executesql @stmt = @sql`, PL/pgSQL `EXECUTE
/// sql_text`.
fn executed_variable<'t>(text: &'t str, tokens: &[lexer::Token], i: usize) -> Option<&'t str> {
    let mut j = i + 1;
    while tokens
        .get(j)
        .is_some_and(|t| t.kind == lexer::TokenKind::LParen)
    {
        j += 1;
    }
    // `EXEC [sys].[sp_executesql] ...`: the procedure is handled at its own name.
    let next = tokens.get(j)?;
    let named_stmt = tokens.get(j + 1).is_some_and(|t| &text[t.range()] == "=")
        && next.kind == lexer::TokenKind::Parameter;
    let operand = if named_stmt {
        tokens.get(j + 2)
    } else {
        Some(next)
    }?;
    matches!(
        operand.kind,
        lexer::TokenKind::Parameter | lexer::TokenKind::Word
    )
    .then(|| &text[operand.range()])
}

fn cmp_ignore_ascii_case(a: &str, b: &str) -> std::cmp::Ordering {
    a.bytes()
        .map(|c| c.to_ascii_lowercase())
        .cmp(b.bytes().map(|c| c.to_ascii_lowercase()))
}

/// No stop: the walk back reached the start of the text or an unmatched `)`.
const NO_STOP: u32 = u32::MAX;

fn is_string_function(word: &[u8]) -> bool {
    // Lengths 4 (`trim`) to 14 (`quote_nullable`): most words are ruled out at once.
    (4..=14).contains(&word.len())
        && STRING_FUNCTIONS
            .iter()
            .any(|f| word.eq_ignore_ascii_case(f.as_bytes()))
}

/// What the walk back over a string expression does at a token, as
/// [`executed_strings`] walks: a string, parameter, number, comma, `+`, `||` or the name
/// of one of the [`STRING_FUNCTIONS`] before its `(` is part of the expression and
/// skipped; a parenthesised group is skipped whole; anything else stops the walk.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Step {
    Open,
    Close,
    Skip,
    Stop,
}

fn step(bytes: &[u8], tokens: &[lexer::Token], j: usize) -> Step {
    use lexer::TokenKind;
    let t = &tokens[j];
    match t.kind {
        TokenKind::RParen => Step::Close,
        TokenKind::LParen => Step::Open,
        TokenKind::String | TokenKind::Parameter | TokenKind::Comma | TokenKind::Number => {
            Step::Skip
        }
        TokenKind::Operator if matches!(&bytes[t.range()], b"+" | b"||") => Step::Skip,
        TokenKind::Word
            if tokens
                .get(j + 1)
                .is_some_and(|n| n.kind == TokenKind::LParen)
                && is_string_function(&bytes[t.range()]) =>
        {
            Step::Skip
        }
        _ => Step::Stop,
    }
}

/// Where the walk back from each token over the expression before it stops: for each
/// `j`, the index of the first token before `j` that [`step`] does not skip, or
/// [`NO_STOP`] when the walk reaches the start or an unmatched `)`. Found forwards in
/// one pass: the stop before `j` is the stop before `j - 1` when `tokens[j - 1]` is
/// skipped, and the stop before the matching `(` when it is a `)`.
fn expression_stops(text: &str, tokens: &[lexer::Token]) -> Vec<u32> {
    let bytes = text.as_bytes();
    let mut stops = Vec::with_capacity(tokens.len() + 1);
    stops.push(NO_STOP);
    let mut open = Vec::new();
    // The stop before the token being examined (`stops[j]`).
    let mut stop = NO_STOP;
    for j in 0..tokens.len() {
        stop = match step(bytes, tokens, j) {
            Step::Close => open.pop().map_or(NO_STOP, |m: usize| stops[m]),
            Step::Open => {
                open.push(j);
                stop
            }
            Step::Skip => stop,
            // Token counts are bounded by the file size limit, far below `u32::MAX`.
            Step::Stop => u32::try_from(j).unwrap_or(NO_STOP),
        };
        stops.push(stop);
    }
    stops
}

/// The string tokens whose walk back stops at token `start` (as [`expression_stops`]
/// would find), at most [`MAX_EXPRESSION_TOKENS`] after it, appended to `out` in order.
/// Found forwards from `start`: the walk of a later token can only stop at `start` while
/// no token after it has stopped a walk outside parentheses opened after it, so the
/// search ends there, or at a `)` it did not see opened. Returns the tokens examined.
fn strings_stopping_at(
    bytes: &[u8],
    tokens: &[lexer::Token],
    start: usize,
    out: &mut Vec<usize>,
) -> usize {
    // The stop before each `(` still open, and the stop before the current token.
    let mut open: Vec<usize> = Vec::new();
    let mut stop = start;
    let end = tokens.len().min(start + MAX_EXPRESSION_TOKENS + 1);
    for j in start + 1..end {
        if stop == start && tokens[j].kind == lexer::TokenKind::String {
            out.push(j);
        }
        match step(bytes, tokens, j) {
            Step::Close => match open.pop() {
                Some(before) => stop = before,
                None => return j - start,
            },
            Step::Open => open.push(stop),
            Step::Skip => {}
            Step::Stop if open.is_empty() => return j - start,
            Step::Stop => stop = j,
        }
    }
    end.saturating_sub(start + 1)
}

/// The indices of the string tokens whose value is executed as SQL: an argument of
/// `EXEC`/`EXECUTE` or `sp_executesql` (directly, in a concatenation, or in a string
/// function such as `format()` or `concat()`), a value assigned (`=`, `+=`, `:=`) to a
/// variable that is executed, or a quoted body after `AS`/`DO`. A message (`PRINT`, `RAISERROR`, `RAISE`,
/// `THROW`) or a value selected, inserted or compared is not.
///
/// Only the strings `candidate` accepts are returned (the linter passes those that
/// mention a fenced table); it is asked only about strings that are executed. The walk
/// back from each string over the expression it is part of is bounded (512 tokens), so
/// the time is linear in the number of tokens.
pub fn executed_strings(
    text: &str,
    tokens: &[lexer::Token],
    candidate: impl Fn(&lexer::Token) -> bool,
) -> Vec<usize> {
    let marks = lexer::Marks {
        executing: (0..tokens.len())
            .filter(|&i| executes(text, &tokens[i]))
            .collect(),
        bodies: (1..tokens.len())
            .filter(|&p| {
                tokens[p].kind == lexer::TokenKind::String && is_body_word(text, &tokens[p - 1])
            })
            .collect(),
        assignments: (0..tokens.len())
            .filter(|&k| {
                let t = &tokens[k];
                t.kind == lexer::TokenKind::Operator && matches!(&text[t.range()], "=" | "+=")
            })
            .collect(),
        ..lexer::Marks::default()
    };
    executed_strings_marked(text, tokens, &marks, candidate)
}

/// Whether `token` is the bare word `AS` or `DO`, after which a string is a body.
fn is_body_word(text: &str, t: &lexer::Token) -> bool {
    t.kind == lexer::TokenKind::Word && {
        let raw = &text[t.range()];
        raw.eq_ignore_ascii_case("AS") || raw.eq_ignore_ascii_case("DO")
    }
}

/// [`executed_strings`] over a text already lexed, using what the lexer noted.
pub(crate) fn executed_strings_lexed(
    text: &str,
    lexed: &lexer::Lexed,
    candidate: impl Fn(&lexer::Token) -> bool,
) -> Vec<usize> {
    executed_strings_marked(text, &lexed.tokens, &lexed.marks, candidate)
}

/// How a walk's stop is searched for: forwards from each token a walk can usefully
/// stop at, or, when those searches would examine more than this many tokens per token
/// of the text (stops nested in each other's parentheses), by the pass over all tokens.
const MAX_WINDOW_WORK: usize = 2;

fn executed_strings_marked(
    text: &str,
    tokens: &[lexer::Token],
    marks: &lexer::Marks,
    candidate: impl Fn(&lexer::Token) -> bool,
) -> Vec<usize> {
    let budget = MAX_WINDOW_WORK * tokens.len() + 1024;
    executed_strings_within(text, tokens, marks, candidate, budget)
}

/// [`executed_strings_marked`], searching forwards from the possible stops until `budget`
/// tokens have been examined, then by the pass over all tokens (at once when `budget` is
/// 0).
fn executed_strings_within(
    text: &str,
    tokens: &[lexer::Token],
    marks: &lexer::Marks,
    candidate: impl Fn(&lexer::Token) -> bool,
    budget: usize,
) -> Vec<usize> {
    use lexer::TokenKind;
    if marks.executing.is_empty() {
        // Nothing is executed but quoted bodies: a string right after `AS` or `DO`.
        return marks
            .bodies
            .iter()
            .copied()
            .filter(|&p| candidate(&tokens[p]))
            .collect();
    }
    let mut variables: Vec<&str> = marks
        .executing
        .iter()
        .filter_map(|&i| executed_variable(text, tokens, i))
        .collect();
    variables.sort_unstable_by(|a, b| cmp_ignore_ascii_case(a, b));
    variables.dedup_by(|a, b| a.eq_ignore_ascii_case(b));
    let executed_variable = |token: &lexer::Token| {
        matches!(token.kind, TokenKind::Parameter | TokenKind::Word)
            && variables
                .binary_search_by(|v| cmp_ignore_ascii_case(v, &text[token.range()]))
                .is_ok()
    };
    // Whether the `=` or `+=` at `k` assigns a variable that is executed: the nearest
    // one before it, past a declared type.
    let assigns_executed = |mut k: usize| {
        if tokens
            .get(k.wrapping_sub(1))
            .is_some_and(|p| &text[p.range()] == ":")
        {
            k -= 1;
        }
        let parameter = (k.saturating_sub(8)..k)
            .rev()
            .find(|&v| tokens[v].kind == TokenKind::Parameter)
            .filter(|&v| executed_variable(&tokens[v]));
        let word = k
            .checked_sub(1)
            .filter(|&v| tokens[v].kind == TokenKind::Word && executed_variable(&tokens[v]));
        parameter.is_some() || word.is_some()
    };
    // Whether the string at `position`, whose walk back stops at `stop`, is executed.
    let executed = |position: usize, stop: usize| {
        let t = &tokens[stop];
        let raw = &text[t.range()];
        // The cheap tests first: `candidate` searches the string's text.
        if executes(text, t) {
            candidate(&tokens[position])
        } else if is_body_word(text, t) {
            // A function body in quotes (`AS 'UPDATE ...' LANGUAGE sql`), a `DO` block.
            stop + 1 == position && candidate(&tokens[position])
        } else if matches!(raw, "=" | "+=") {
            assigns_executed(stop) && candidate(&tokens[position])
        } else {
            false
        }
    };

    // A string is executed only when its walk stops at an executing token, at `AS` or
    // `DO` right before it, or at an assignment to an executed variable: the search
    // starts at those tokens, not at every string.
    let mut starts = marks.executing.clone();
    if !variables.is_empty() {
        starts.extend(
            marks
                .assignments
                .iter()
                .copied()
                .filter(|&k| assigns_executed(k)),
        );
    }
    let bytes = text.as_bytes();
    let mut work = 0;
    let mut out = Vec::new();
    let mut strings = Vec::new();
    for &start in &starts {
        strings.clear();
        work += strings_stopping_at(bytes, tokens, start, &mut strings);
        if work >= budget {
            return executed_by_full_pass(text, tokens, executed);
        }
        out.extend(strings.iter().copied().filter(|&p| executed(p, start)));
    }
    out.extend(marks.bodies.iter().copied().filter(|&p| executed(p, p - 1)));
    out.sort_unstable();
    out.dedup();
    out
}

/// [`executed_strings_marked`]'s answer from the stops of every token.
fn executed_by_full_pass(
    text: &str,
    tokens: &[lexer::Token],
    executed: impl Fn(usize, usize) -> bool,
) -> Vec<usize> {
    let stops = expression_stops(text, tokens);
    (0..tokens.len())
        .filter(|&position| {
            let stop = stops[position];
            tokens[position].kind == lexer::TokenKind::String
                && stop != NO_STOP
                && position - stop as usize <= MAX_EXPRESSION_TOKENS
                && executed(position, stop as usize)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A WHERE clause that is not understood to its end is an error, never a silently
    /// truncated condition: the part not understood could hold a fence predicate.
    #[test]
    fn truncated_conditions_are_errors() {
        for sql in [
            "UPDATE t SET a = 1 WHERE b = 1 c = 2 AND Generation = @g",
            "UPDATE t SET a = 1 WHERE b = 1 AND c = 2 = 3 AND Generation = @g",
            "UPDATE t SET a = 1 b = 2 WHERE Generation = @g",
        ] {
            let analysed = analyse(sql);
            assert!(analysed[0].result.is_err(), "{sql}");
        }
    }

    /// The search forwards from the tokens a walk can stop at finds exactly the strings
    /// the pass over all tokens finds, on random sequences of the tokens that matter.
    #[test]
    fn forward_search_agrees_with_the_full_pass() {
        const PIECES: &[&str] = &[
            "EXEC",
            "EXECUTE",
            "sp_executesql",
            "[sp_executesql]",
            "(",
            ")",
            "(",
            ")",
            "'UPDATE t SET a = 1'",
            "N'x'",
            "$$y$$",
            "+",
            "||",
            "@sql",
            "@s",
            "sql_text",
            "=",
            "+=",
            ":",
            ",",
            "format",
            "concat",
            "upper",
            "SELECT",
            "AS",
            "DO",
            "1",
            "x",
            "DECLARE",
            ";",
            "PRINT",
            "GO\n",
        ];
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let (mut texts_with_executed, mut executed_total) = (0, 0);
        for _ in 0..20_000 {
            let len = next(60);
            let text: Vec<&str> = (0..len).map(|_| PIECES[next(PIECES.len())]).collect();
            let text = text.join(" ");
            let lexed = lexer::lex(&text);
            let tokens = &lexed.tokens;
            let forward =
                executed_strings_within(&text, tokens, &lexed.marks, |_| true, usize::MAX);
            let full = executed_strings_within(&text, tokens, &lexed.marks, |_| true, 0);
            assert_eq!(forward, full, "{text}");
            assert_eq!(executed_strings(&text, tokens, |_| true), full, "{text}");
            texts_with_executed += usize::from(!full.is_empty());
            executed_total += full.len();
        }
        // Not vacuous: many texts execute strings, through every kind of stop.
        assert!(texts_with_executed > 2_000, "{texts_with_executed}");
        assert!(executed_total > 5_000, "{executed_total}");
    }

    /// An `INSERT` of a target the caller does not want is parsed lean: as far as its
    /// target, the same target as the whole parse, an error only when there is no
    /// target. A target read through a CTE is parsed whole.
    #[test]
    fn lean_inserts_parse_as_far_as_their_target() {
        let nothing_wanted = |_: &TableName| None;
        for sql in [
            "INSERT INTO t (a, b) VALUES (1, 'x'), (@p, NULL)",
            "INSERT t VALUES (1, 2)",
            "INSERT INTO t VALUES (1 = 2)",
            "INSERT INTO t (a) VALUES (1",
            "INSERT INTO t (a) SELECT a FROM u WHERE b = 1",
            "INSERT INTO t (id) VALUES ($1) ON CONFLICT DO",
            "INSERT INTO",
            "INSERT INTO t DEFAULT VALUES",
            "REPLACE INTO t (a) VALUES (?1)",
            "WITH c AS (SELECT a FROM u) INSERT INTO c (a) VALUES (1)",
        ] {
            let lexed = lexer::lex(sql);
            let tokens = &lexed.tokens;
            for found in parse::find_statements(sql, tokens) {
                let whole = parse::parse_found(sql, tokens, &found);
                let lean = parse::parse_found_for(sql, tokens, &found, Some(&nothing_wanted));
                if found.first < found.keyword {
                    assert_eq!(whole, lean, "{sql}");
                    continue;
                }
                match (&whole, &lean) {
                    (Ok(whole), Ok(lean)) => {
                        assert_eq!(whole.target, lean.target, "{sql}");
                        assert_eq!(whole.deletes, lean.deletes, "{sql}");
                        assert!(
                            lean.inserts.is_empty() && lean.mentioned.is_empty(),
                            "{sql}"
                        );
                    }
                    (Err(_), Ok(lean)) => assert!(lean.target.is_some(), "{sql}"),
                    (Err(whole), Err(lean)) => {
                        assert_eq!(whole, lean, "{sql}");
                        assert!(whole.message.contains("expected the table"), "{sql}");
                    }
                    (Ok(_), Err(lean)) => panic!("{sql}: lean {lean:?}"),
                }
            }
        }
    }

    /// Of a wanted `INSERT`, the values are parsed only where they are examined: when
    /// the columns are not named, or name the generation column.
    #[test]
    fn insert_values_are_parsed_where_the_generation_can_be() {
        let generation = |_: &TableName| Some("Generation");
        let rows = |sql: &str| {
            let lexed = lexer::lex(sql);
            let found = &parse::find_statements(sql, &lexed.tokens)[0];
            let statement =
                parse::parse_found_for(sql, &lexed.tokens, found, Some(&generation)).unwrap();
            assert_eq!(statement.range, 0..sql.len(), "{sql}");
            let insert = &statement.inserts[0];
            let values: Vec<Vec<Option<i64>>> = insert
                .rows
                .iter()
                .flatten()
                .map(|row| row.iter().map(|v| v.integer).collect())
                .collect();
            values
        };
        assert_eq!(
            rows("INSERT INTO t (Id, generation) VALUES (1, 0), (2, 5)"),
            [[Some(1), Some(0)], [Some(2), Some(5)]]
        );
        assert_eq!(rows("INSERT INTO t VALUES (1, 7)"), [[Some(1), Some(7)]]);
        assert!(rows("INSERT INTO t (Id, Payload) VALUES (1, 7), (f(2), 'x')").is_empty());
        // Skipped values still end where the parsed ones do.
        assert!(
            rows("INSERT INTO t (Id) VALUES ((SELECT 1), 2) ON CONFLICT DO NOTHING").is_empty()
        );
    }

    /// Statements from real T-SQL, PostgreSQL and SQLite code: each must be found and parsed.
    macro_rules! reached {
        ($( $name:ident: $sql:expr; )*) => {
            $(
                #[test]
                fn $name() {
                    let analysed = analyse($sql);
                    assert!(!analysed.is_empty(), "not found: {}", $sql);
                    for a in &analysed {
                        assert!(a.result.is_ok(), "{:?} in {}", a.result.as_ref().err().map(|e| &e.0), $sql);
                    }
                }
            )*
        };
    }

    reached! {
        variable_and_column_assignment: "UPDATE dbo.Counter SET @next = Value = Value + 1 WHERE Name = @name";
        table_hints: "UPDATE t WITH (ROWLOCK, UPDLOCK) SET a = 1 WHERE id = @id";
        from_with_hints: "UPDATE dbo.T SET x = 1 FROM dbo.T WITH (NOLOCK) INNER JOIN dbo.U u ON u.Id = T.Id WHERE u.Flag = 1";
        xml_modify: "UPDATE dbo.Docs SET Body.modify('delete /a') WHERE Id = @id";
        write_method: "UPDATE dbo.Docs SET Body.WRITE(@chunk, NULL, 0) WHERE Id = @id";
        top_variable: "UPDATE TOP (@n) q SET Taken = 1 OUTPUT inserted.Id INTO @taken (Id) WHERE Taken = 0";
        default_value: "UPDATE t SET a = DEFAULT, b = (SELECT MAX(x) FROM u), c = CASE WHEN d > 1 THEN 2 ELSE 3 END WHERE id = 1";
        current_of: "UPDATE t SET a = 1 WHERE CURRENT OF cur";
        table_variable: "UPDATE @work SET done = 1 WHERE id = @id; DELETE FROM @work; DELETE @work WHERE done = 1";
        temp_table: "UPDATE #work SET done = 1; DELETE ##global WHERE x IS NOT NULL";
        delete_output: "DELETE FROM dbo.Queue OUTPUT deleted.Id, deleted.Payload WHERE Id = @id";
        insert_exec: "INSERT INTO @t EXEC dbo.GetThings @a = 1; INSERT dbo.T (a) SELECT a FROM dbo.U; INSERT INTO dbo.T DEFAULT VALUES";
        merge_full: "MERGE dbo.T AS t USING dbo.S AS s ON t.Id = s.Id WHEN MATCHED AND s.Deleted = 1 THEN DELETE WHEN MATCHED THEN UPDATE SET t.A = s.A WHEN NOT MATCHED BY TARGET THEN INSERT (Id, A) VALUES (s.Id, s.A) WHEN NOT MATCHED BY SOURCE THEN DELETE OUTPUT $action, inserted.Id;";
        option_clause: "UPDATE t SET a = 1 WHERE b = 2 OPTION (RECOMPILE, MAXDOP 1)";
        collate: "UPDATE t SET a = 1 WHERE name = @n COLLATE Latin1_General_CI_AS AND x LIKE N'%a%' ESCAPE '~'";
        between_in_exists: "UPDATE t SET a = 1 WHERE b BETWEEN 1 AND 2 AND c IN (1, 2) AND EXISTS (SELECT 1 FROM u WHERE u.id = t.id) AND NOT d IS NULL";
        if_else_without_semicolons: "IF @x = 1 UPDATE t SET a = 1 WHERE id = @id ELSE UPDATE t SET a = 2 WHERE id = @id";
        try_catch: "BEGIN TRY UPDATE t SET a = 1 WHERE id = 1 END TRY BEGIN CATCH UPDATE t SET a = 0 WHERE id = 1 END CATCH";
        pg_alias_from: "UPDATE t AS x SET a = y.a FROM y WHERE y.id = x.id RETURNING *";
        pg_only_and_row_assign: "UPDATE ONLY t SET (a, b) = (1, 2) WHERE id = $1";
        pg_casts: "UPDATE t SET a = $1::jsonb, b = $2::text[] WHERE id = $3::uuid AND c @> $4";
        pg_conflict_nothing: "INSERT INTO t (id) VALUES ($1) ON CONFLICT DO NOTHING";
        pg_conflict_constraint: "INSERT INTO t (id, a) VALUES ($1, $2) ON CONFLICT ON CONSTRAINT t_pkey DO UPDATE SET a = EXCLUDED.a";
        pg_cte_delete: "WITH gone AS (DELETE FROM t WHERE id = $1 RETURNING id) SELECT count(*) FROM gone";
        sqlite_or_ignore: "UPDATE OR IGNORE t SET a = ?1 WHERE id = ?2; INSERT OR IGNORE INTO t (id) VALUES (?1)";
        sqlite_limit: "UPDATE t SET a = 1 WHERE b = 2 ORDER BY c LIMIT 1; DELETE FROM t WHERE a = :a LIMIT 5";
        window_in_subquery: "UPDATE t SET rank = (SELECT ROW_NUMBER() OVER (PARTITION BY g ORDER BY v) FROM u WHERE u.id = t.id) WHERE id > 0";
        iif_and_cast: "UPDATE t SET a = IIF(b > 1, CAST(c AS int), TRY_CONVERT(int, d)) WHERE e = 1";
        date_functions: "UPDATE t SET a = DATEADD(minute, -5, GETUTCDATE()), b = EXTRACT(epoch FROM now()) WHERE c < DATEDIFF(second, d, SYSUTCDATETIME())";
        multi_join_delete: "DELETE a FROM dbo.A a LEFT OUTER JOIN dbo.B b ON b.Id = a.BId CROSS APPLY dbo.F(a.Id) f WHERE b.Id IS NULL";
        grant_variants: "GRANT UPDATE ON dbo.T TO r; GRANT SELECT ON SCHEMA::dbo TO r; GRANT USAGE ON SEQUENCE s TO r; GRANT EXECUTE ON FUNCTION f() TO r";
        truncate: "TRUNCATE TABLE dbo.T; TRUNCATE a, b RESTART IDENTITY";
        pg_json_operators: "UPDATE t SET data = data || $1, n = (data->>'n')::int WHERE data->'k' = $2 AND tags @> $3 AND id = $4";
        columns_named_like_statements: "UPDATE quotes SET close = $1, open = $2 WHERE close > 0 AND open < close AND id = $3 RETURNING close";
        tsql_statement_after_where: "UPDATE t SET a = 1 WHERE b = 2 PRINT 'done' WAITFOR DELAY '00:00:01' RAISERROR('x', 1, 1)";
    }
}
