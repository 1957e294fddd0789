//! Names as the databases read them: the quotes removed, a doubled closing quote read
//! as one, PostgreSQL's Unicode escapes decoded.

use std::borrow::Cow;

use super::{Token, TokenKind};

/// The name a bare or quoted identifier token stands for: `"a""b"` is `a"b`,
/// `[a]]b]` is `a]b`, `` `a``b` `` is ``a`b``, and PostgreSQL's `U&"d\0061t"` is `dat`,
/// its escapes introduced by `escape` (`\`, or what a `UESCAPE` after it names). An
/// escape that does not decode is kept as written. Any other token is its text.
pub(super) fn unquoted<'a>(text: &'a str, token: &Token, escape: char) -> Cow<'a, str> {
    if token.kind != TokenKind::QuotedIdent {
        return Cow::Borrowed(super::ident_text(text, token));
    }
    // A token made by hand may lie outside the text: it names nothing.
    let raw = text.get(token.range()).unwrap_or("");
    let unicode = matches!(raw.as_bytes(), [b'U' | b'u', b'&', ..]);
    let quoted = if unicode { &raw[2..] } else { raw };
    let close = match quoted.as_bytes().first() {
        Some(b'[') => b']',
        Some(&open) if open.is_ascii() => open,
        _ => return Cow::Borrowed(quoted),
    };
    // The opening quote is ASCII; the closing one may be missing (end of input).
    let inner = &quoted[1..];
    let inner = match inner.as_bytes().last() {
        Some(&last) if last == close && quoted.len() >= 2 => &inner[..inner.len() - 1],
        _ => inner,
    };
    // Every name is read here: the search for a doubled quote is the one cost most pay.
    let undoubled = if memchr::memchr(close, inner.as_bytes()).is_some() {
        let close = char::from(close);
        let doubled: String = [close, close].iter().collect();
        Cow::Owned(inner.replace(&doubled, &close.to_string()))
    } else {
        Cow::Borrowed(inner)
    };
    if unicode && undoubled.contains(escape) {
        Cow::Owned(unicode_escaped(&undoubled, escape))
    } else {
        undoubled
    }
}

/// PostgreSQL's Unicode escapes in `name`: `<escape>XXXX` and `<escape>+XXXXXX`
/// (hexadecimal code points), and the escape character doubled for itself.
fn unicode_escaped(name: &str, escape: char) -> String {
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(at) = rest.find(escape) {
        out.push_str(&rest[..at]);
        let after = &rest[at + escape.len_utf8()..];
        let (digits, skip) = match after.strip_prefix('+') {
            Some(long) => (long.get(..6), 7),
            None => (after.get(..4), 4),
        };
        if after.starts_with(escape) {
            out.push(escape);
            rest = &after[escape.len_utf8()..];
        } else if let Some(c) = digits
            .filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|d| u32::from_str_radix(d, 16).ok())
            .and_then(char::from_u32)
        {
            out.push(c);
            rest = &after[skip..];
        } else {
            out.push(escape);
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Dialect;
    use crate::lex::{lex, lex_as};

    fn name(reading: Option<Dialect>, text: &str) -> String {
        let lexed = match reading {
            Some(d) => lex_as(d, text).unwrap(),
            None => lex(text),
        };
        unquoted(text, &lexed.tokens[0], '\\').into_owned()
    }

    #[test]
    fn quotes_are_removed_and_doubled_closers_read_once() {
        assert_eq!(name(None, "\"a\"\"b\""), "a\"b");
        assert_eq!(name(Some(Dialect::Mssql), "[a]]b]"), "a]b");
        assert_eq!(name(Some(Dialect::Sqlite), "`a``b`"), "a`b");
        assert_eq!(name(None, "plain"), "plain");
        assert_eq!(name(None, "\"open"), "open");
    }

    #[test]
    fn unicode_escapes_are_decoded() {
        assert_eq!(name(Some(Dialect::Postgres), "U&\"\\0052eport\""), "Report");
        assert_eq!(name(None, "u&\"d\\+000061t\\\\a\""), "dat\\a");
        // A malformed escape is kept as written, not guessed at.
        assert_eq!(name(None, "U&\"a\\zz\""), "a\\zz");
        let text = "U&\"d!0061t\"";
        let lexed = lex(text);
        assert_eq!(unquoted(text, &lexed.tokens[0], '!'), "dat");
    }
}
