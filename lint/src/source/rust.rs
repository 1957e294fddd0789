//! String literals and comments of Rust source, found by a small hand lexer.
//!
//! A lexer rather than a parser: it works on files that do not compile, inside any macro
//! body (`query!`, `sqlx::query!`, `format!`), and costs one pass. It knows enough Rust to
//! tell strings from chars, lifetimes, comments and doc comments, and maps every byte of
//! a literal's *value* back to the file, escapes and line continuations included.
//! Literals inside attributes (`#[doc = "..."]`) and inside the bodies of functions
//! annotated `#[fenced_write]` (which the compiler already checks) are marked skipped.
//! The string literals of a `concat!` that holds nothing else are reported as one group,
//! so that a statement split over several literals is checked whole.

use std::ops::Range;

/// A string literal in a Rust file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Literal {
    /// The whole token, prefix and quotes included.
    pub range: Range<usize>,
    /// Byte range of the literal's contents (between the quotes).
    pub contents: Range<usize>,
    /// Raw string (`r"..."`, `r#"..."#`): no escapes.
    pub raw: bool,
    /// Inside an attribute or a `#[fenced_write]` function: not checked.
    pub skipped: bool,
    /// Offset of the first token of the enclosing Rust statement or item.
    pub statement_start: usize,
}

/// A plain `//` comment (not a doc comment).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineComment {
    /// The comment, `//` included.
    pub range: Range<usize>,
}

/// What the lexer found.
#[derive(Debug, Clone, Default)]
pub struct Scanned {
    /// String literals, in order.
    pub literals: Vec<Literal>,
    /// Plain line comments, in order.
    pub comments: Vec<LineComment>,
    /// Runs of [`Scanned::literals`] (index ranges, at least two literals each) that are
    /// the whole arguments of one `concat!`: the compiler joins them into one string.
    pub concatenated: Vec<Range<usize>>,
}

/// The arguments of a `concat!` being scanned.
struct Concat {
    /// Delimiters open inside the macro's own, which is depth 1.
    depth: usize,
    /// The first of its literals, if any yet.
    first: Option<usize>,
    /// How many literals it holds.
    count: usize,
    /// Only string literals and commas so far.
    only_strings: bool,
}

impl Concat {
    /// An opening delimiter inside the arguments: a nested group, whose contents are
    /// not plain string literals of the macro.
    fn open_delimiter(concat: &mut Option<Concat>) {
        if let Some(c) = concat.as_mut() {
            c.depth += 1;
            c.only_strings = false;
        }
    }

    /// A closing delimiter: the end of a nested group, or of the macro's arguments,
    /// which makes its literals a group if they are all it holds.
    fn close_delimiter(concat: &mut Option<Concat>, concatenated: &mut Vec<Range<usize>>) {
        let Some(c) = concat.as_mut() else { return };
        c.depth -= 1;
        if c.depth > 0 {
            return;
        }
        if let (true, Some(first)) = (c.only_strings && c.count >= 2, c.first) {
            concatenated.push(first..first + c.count);
        }
        *concat = None;
    }

    /// A token other than a string literal or a comma, directly in the arguments or
    /// nested: the joined value would not be the literals' alone.
    fn other_token(concat: &mut Option<Concat>) {
        if let Some(c) = concat.as_mut() {
            c.only_strings = false;
        }
    }
}

/// After the identifier `concat` ending at `i`: the offset just past `!(` or `![`, if
/// that is what follows (whitespace allowed between).
fn concat_opening(bytes: &[u8], mut i: usize) -> Option<usize> {
    let skip_whitespace = |mut j: usize| {
        while bytes.get(j).is_some_and(u8::is_ascii_whitespace) {
            j += 1;
        }
        j
    };
    i = skip_whitespace(i);
    if bytes.get(i) != Some(&b'!') {
        return None;
    }
    i = skip_whitespace(i + 1);
    matches!(bytes.get(i), Some(b'(') | Some(b'[')).then_some(i + 1)
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c >= 0x80
}

fn is_ident_continue(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

/// Scans a Rust file.
pub fn scan(text: &str) -> Scanned {
    let bytes = text.as_bytes();
    let mut out = Scanned::default();
    let mut i = 0;
    let mut brace_depth = 0usize;
    let mut bracket_depth_in_attribute: Option<usize> = None;
    let mut attribute_has_fenced_write = false;
    let mut pending_fenced_fn = false;
    let mut seen_fn = false;
    let mut skip_above_depth: Option<usize> = None;
    let mut statement_start: Option<usize> = None;
    let mut concat: Option<Concat> = None;
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        // Comments.
        if b == b'/' && bytes.get(i + 1) == Some(&b'/') {
            let end = memchr::memchr(b'\n', &bytes[i..]).map_or(bytes.len(), |n| i + n);
            let doc = matches!(bytes.get(i + 2), Some(b'/') | Some(b'!'))
                && bytes.get(i + 3) != Some(&b'/');
            if !doc {
                out.comments.push(LineComment { range: i..end });
            }
            i = end;
            continue;
        }
        if b == b'/' && bytes.get(i + 1) == Some(&b'*') {
            let mut depth = 1;
            let mut j = i + 2;
            while j < bytes.len() && depth > 0 {
                if bytes[j] == b'/' && bytes.get(j + 1) == Some(&b'*') {
                    depth += 1;
                    j += 2;
                } else if bytes[j] == b'*' && bytes.get(j + 1) == Some(&b'/') {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            i = j;
            continue;
        }
        let token_start = i;
        // The first token after `;`, `{` or `}` starts a statement (or an item; an
        // attribute in front of it counts as its start).
        statement_start.get_or_insert(token_start);
        // String literals, with prefixes.
        let literal = string_at(bytes, i);
        if let Some((end, contents, raw)) = literal {
            let in_attribute = bracket_depth_in_attribute.is_some();
            let in_skipped_fn = skip_above_depth.is_some_and(|d| brace_depth > d);
            if let Some(c) = concat.as_mut() {
                if c.depth == 1 {
                    c.first.get_or_insert(out.literals.len());
                    c.count += 1;
                } else {
                    c.only_strings = false;
                }
            }
            out.literals.push(Literal {
                range: i..end,
                contents,
                raw,
                skipped: in_attribute || in_skipped_fn,
                statement_start: statement_start.unwrap_or(i),
            });
            i = end;
            continue;
        }
        match b {
            b',' => i += 1,
            b'(' => {
                Concat::open_delimiter(&mut concat);
                i += 1;
            }
            b')' => {
                Concat::close_delimiter(&mut concat, &mut out.concatenated);
                i += 1;
            }
            b'\'' => {
                Concat::other_token(&mut concat);
                // A char literal or a lifetime / label.
                if bytes.get(i + 1) == Some(&b'\\') {
                    let mut j = i + 2;
                    while j < bytes.len() && bytes[j] != b'\'' && bytes[j] != b'\n' {
                        j += 1;
                    }
                    i = j + 1;
                } else {
                    let c_len = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                    if bytes.get(i + 1 + c_len) == Some(&b'\'') {
                        i += 2 + c_len;
                    } else {
                        i += 1;
                        while i < bytes.len() && is_ident_continue(bytes[i]) {
                            i += 1;
                        }
                    }
                }
            }
            b'#' if bytes.get(i + 1) == Some(&b'[')
                || (bytes.get(i + 1) == Some(&b'!') && bytes.get(i + 2) == Some(&b'[')) =>
            {
                Concat::other_token(&mut concat);
                i += if bytes[i + 1] == b'!' { 3 } else { 2 };
                bracket_depth_in_attribute = Some(1);
                attribute_has_fenced_write = false;
            }
            b'[' => {
                if let Some(d) = bracket_depth_in_attribute.as_mut() {
                    *d += 1;
                }
                Concat::open_delimiter(&mut concat);
                i += 1;
            }
            b']' => {
                Concat::close_delimiter(&mut concat, &mut out.concatenated);
                if let Some(d) = bracket_depth_in_attribute.as_mut() {
                    *d -= 1;
                    if *d == 0 {
                        bracket_depth_in_attribute = None;
                        if attribute_has_fenced_write {
                            pending_fenced_fn = true;
                            seen_fn = false;
                        }
                    }
                }
                i += 1;
            }
            b'{' => {
                // Not inside a `concat!`'s arguments in code that compiles.
                concat = None;
                if pending_fenced_fn && seen_fn && bracket_depth_in_attribute.is_none() {
                    if skip_above_depth.is_none() {
                        skip_above_depth = Some(brace_depth);
                    }
                    pending_fenced_fn = false;
                }
                brace_depth += 1;
                statement_start = None;
                i += 1;
            }
            b'}' => {
                concat = None;
                brace_depth = brace_depth.saturating_sub(1);
                if skip_above_depth == Some(brace_depth) {
                    skip_above_depth = None;
                }
                statement_start = None;
                i += 1;
            }
            b';' => {
                concat = None;
                if pending_fenced_fn && seen_fn {
                    pending_fenced_fn = false;
                }
                if bracket_depth_in_attribute.is_none() {
                    statement_start = None;
                }
                i += 1;
            }
            _ if is_ident_start(b) => {
                let start = i;
                while i < bytes.len() && is_ident_continue(bytes[i]) {
                    i += 1;
                }
                let ident = &text[start..i];
                Concat::other_token(&mut concat);
                if ident == "concat"
                    && concat.is_none()
                    && let Some(after) = concat_opening(bytes, i)
                {
                    concat = Some(Concat {
                        depth: 1,
                        first: None,
                        count: 0,
                        only_strings: true,
                    });
                    i = after;
                    continue;
                }
                if bracket_depth_in_attribute.is_some() && ident == "fenced_write" {
                    attribute_has_fenced_write = true;
                }
                if pending_fenced_fn && ident == "fn" {
                    seen_fn = true;
                }
            }
            b'0'..=b'9' => {
                Concat::other_token(&mut concat);
                while i < bytes.len()
                    && (bytes[i].is_ascii_alphanumeric()
                        || bytes[i] == b'_'
                        || (bytes[i] == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)))
                {
                    i += 1;
                }
            }
            _ => {
                Concat::other_token(&mut concat);
                i += text[i..].chars().next().map_or(1, char::len_utf8);
            }
        }
    }
    out
}

/// A string literal starting at `i`: `(end, contents, raw)`.
fn string_at(bytes: &[u8], i: usize) -> Option<(usize, Range<usize>, bool)> {
    // Not part of a longer identifier such as `bar"`.
    if i > 0 && is_ident_continue(bytes[i - 1]) {
        return None;
    }
    let mut j = i;
    if matches!(bytes.get(j), Some(b'b') | Some(b'c')) {
        j += 1;
    }
    let raw = bytes.get(j) == Some(&b'r') && matches!(bytes.get(j + 1), Some(b'"') | Some(b'#'));
    if raw {
        j += 1;
        let mut hashes = 0;
        while bytes.get(j) == Some(&b'#') {
            hashes += 1;
            j += 1;
        }
        if bytes.get(j) != Some(&b'"') {
            return None;
        }
        let open = j + 1;
        let mut k = open;
        while k < bytes.len() {
            if bytes[k] == b'"'
                && bytes[k + 1..]
                    .iter()
                    .take(hashes)
                    .filter(|b| **b == b'#')
                    .count()
                    == hashes
                && bytes.len() >= k + 1 + hashes
            {
                return Some((k + 1 + hashes, open..k, true));
            }
            k += 1;
        }
        return Some((bytes.len(), open..bytes.len(), true));
    }
    if bytes.get(j) != Some(&b'"') {
        return None;
    }
    let open = j + 1;
    let mut k = open;
    while k < bytes.len() {
        match bytes[k] {
            b'\\' => k += 2,
            b'"' => return Some((k + 1, open..k, false)),
            _ => k += 1,
        }
    }
    Some((bytes.len(), open..bytes.len(), false))
}

/// The value of a literal and, for each byte of the value (and one past its end), the
/// byte offset in the file it came from.
pub fn literal_value(text: &str, literal: &Literal) -> (String, Vec<usize>) {
    let contents = &text[literal.contents.clone()];
    let base = literal.contents.start;
    let mut value = String::with_capacity(contents.len());
    let mut offsets = Vec::with_capacity(contents.len() + 1);
    if literal.raw {
        value.push_str(contents);
        offsets.extend((0..contents.len()).map(|i| base + i));
        offsets.push(base + contents.len());
        return (value, offsets);
    }
    let mut chars = contents.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let source = base + at;
        if c != '\\' {
            push(&mut value, &mut offsets, c, source);
            continue;
        }
        let Some((_, escape)) = chars.next() else {
            break;
        };
        let decoded = match escape {
            'n' => Some('\n'),
            't' => Some('\t'),
            'r' => Some('\r'),
            '0' => Some('\0'),
            '\\' => Some('\\'),
            '\'' => Some('\''),
            '"' => Some('"'),
            'x' => {
                let hex: String = (0..2)
                    .filter_map(|_| chars.next().map(|(_, h)| h))
                    .collect();
                u8::from_str_radix(&hex, 16).ok().map(char::from)
            }
            'u' => {
                let mut hex = String::new();
                for (_, h) in chars.by_ref() {
                    if h == '}' {
                        break;
                    }
                    if h != '{' && h != '_' {
                        hex.push(h);
                    }
                }
                u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32)
            }
            '\n' | '\r' => {
                // Line continuation: the newline and the next line's leading whitespace vanish.
                while chars.peek().is_some_and(|(_, w)| w.is_whitespace()) {
                    chars.next();
                }
                None
            }
            _ => None,
        };
        if let Some(decoded) = decoded {
            push(&mut value, &mut offsets, decoded, source);
        }
    }
    offsets.push(literal.contents.end);
    (value, offsets)
}

/// The joined value of consecutive literals (a `concat!`'s), with the offsets of
/// [`literal_value`]: each byte of the value maps to the literal it came from.
pub fn joined_value(text: &str, literals: &[Literal]) -> (String, Vec<usize>) {
    let mut value = String::new();
    let mut offsets = Vec::new();
    for literal in literals {
        let (piece, piece_offsets) = literal_value(text, literal);
        value.push_str(&piece);
        // Each piece's offsets end with one past its end; only the last piece's stays.
        offsets.extend_from_slice(&piece_offsets[..piece_offsets.len() - 1]);
    }
    offsets.push(literals.last().map_or(0, |l| l.contents.end));
    (value, offsets)
}

fn push(value: &mut String, offsets: &mut Vec<usize>, c: char, source: usize) {
    value.push(c);
    offsets.extend((0..c.len_utf8()).map(|i| source + i));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(text: &str) -> Vec<(String, bool)> {
        scan(text)
            .literals
            .iter()
            .map(|l| (literal_value(text, l).0, l.skipped))
            .collect()
    }

    #[test]
    fn finds_literals_everywhere() {
        let text = r####"
/// "doc comment"
//! "inner doc"
// "plain comment"
/* "block" */
const A: &str = "a\n\"b\"";
fn f<'a>(x: &'a str) -> char { let c = '"'; let d = '\''; query!(r#"raw "x""#, b"bytes"); 'x' }
#[doc = "attribute"]
struct S;
"####;
        assert_eq!(
            values(text),
            vec![
                ("a\n\"b\"".to_owned(), false),
                ("raw \"x\"".to_owned(), false),
                ("bytes".to_owned(), false),
                ("attribute".to_owned(), true),
            ]
        );
        assert_eq!(scan(text).comments.len(), 1);
    }

    #[test]
    fn skips_fenced_write_bodies() {
        let text = r#"
impl Repo {
    #[fenced_write(table = "T")]
    async fn publish(&self, lease: &Lease) -> Result<()> { self.db.execute("UPDATE T SET a = 1", &[]).await }
    async fn other(&self) { self.db.execute("UPDATE T SET b = 2", &[]).await }
}
"#;
        assert_eq!(
            values(text),
            vec![
                ("T".to_owned(), true),
                ("UPDATE T SET a = 1".to_owned(), true),
                ("UPDATE T SET b = 2".to_owned(), false)
            ]
        );
    }

    #[test]
    fn maps_escapes_and_continuations() {
        let text = "let q = \"a\\\n    UPDATE\\tx\";";
        let scanned = scan(text);
        let (value, offsets) = literal_value(text, &scanned.literals[0]);
        assert_eq!(value, "aUPDATE\tx");
        let update = value.find("UPDATE").unwrap();
        assert_eq!(&text[offsets[update]..offsets[update] + 6], "UPDATE");
        let x = value.find('x').unwrap();
        assert_eq!(&text[offsets[x]..=offsets[x]], "x");
        assert_eq!(
            &text[scanned.literals[0].statement_start..scanned.literals[0].statement_start + 3],
            "let"
        );
    }

    #[test]
    fn unterminated_input_does_not_panic() {
        for text in ["\"abc", "r#\"abc", "'", "/* x", "#[", "b'", "r##\"x\"#"] {
            let scanned = scan(text);
            for literal in &scanned.literals {
                let _ = literal_value(text, literal);
            }
        }
    }

    #[test]
    fn a_concat_of_strings_only_is_one_group() {
        let text = r#"fn f() { db.execute(concat!("UPDATE T SET a = 1 ", "WHERE k = $1",), &[]); let b = "x"; }"#;
        let scanned = scan(text);
        assert_eq!(scanned.concatenated, vec![0..2]);
        let (value, offsets) = joined_value(text, &scanned.literals[0..2]);
        assert_eq!(value, "UPDATE T SET a = 1 WHERE k = $1");
        let w = value.find("WHERE").unwrap();
        assert_eq!(
            &text[offsets[w]..offsets[w] + 5],
            "WHERE",
            "maps into the second literal"
        );
        assert_eq!(offsets[value.len()], scanned.literals[1].contents.end);
        assert_eq!(
            scan(r#"let q = std::concat! [ "a ", r"b" ];"#).concatenated,
            vec![0..2]
        );
    }

    #[test]
    fn a_concat_with_anything_else_is_no_group() {
        for text in [
            r#"concat!("a ", stringify!(b))"#,
            r#"concat!("a ", 1, "b")"#,
            r#"concat!("a ", 'c', "b")"#,
            r#"concat!("a ", env!("X"), "b")"#,
            r#"concat!("a", concat!("b", "c"))"#,
            r#"concat!("a")"#,
            r#"concat!("a", "b"; "c")"#,
            r#"concat!("a", "b""#,
            r#"concat("a", "b")"#,
        ] {
            assert!(scan(text).concatenated.is_empty(), "{text}");
        }
        // Without a group each literal is still found alone.
        assert_eq!(scan(r#"concat!("a ", 1, "b")"#).literals.len(), 2);
    }
}
