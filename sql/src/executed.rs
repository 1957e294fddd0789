//! Dynamic SQL: the string literals whose value is executed as a statement.
//!
//! The search is generic over the caller's test of a string, so it is compiled in the
//! caller's crate: its small helpers are marked `#[inline]` to be compiled there too.

use crate::lex as lexer;

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
#[inline]
fn executes(text: &str, token: &lexer::Token) -> bool {
    lexer::executes(token.kind, &text.as_bytes()[token.range()])
}

/// The variable whose value the executing token at `i` executes: `EXEC (@sql)`, `EXEC
/// sp_executesql @sql`, `EXECUTE sp_executesql @stmt = @sql`, PL/pgSQL `EXECUTE
/// sql_text`.
#[inline]
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

#[inline]
fn cmp_ignore_ascii_case(a: &str, b: &str) -> std::cmp::Ordering {
    a.bytes()
        .map(|c| c.to_ascii_lowercase())
        .cmp(b.bytes().map(|c| c.to_ascii_lowercase()))
}

/// No stop: the walk back reached the start of the text or an unmatched `)`.
const NO_STOP: u32 = u32::MAX;

#[inline]
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

#[inline]
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
#[inline]
fn is_body_word(text: &str, t: &lexer::Token) -> bool {
    t.kind == lexer::TokenKind::Word && {
        let raw = &text[t.range()];
        raw.eq_ignore_ascii_case("AS") || raw.eq_ignore_ascii_case("DO")
    }
}

/// [`executed_strings`] over a text already lexed, using what the lexer noted.
pub fn executed_strings_lexed(
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
}
