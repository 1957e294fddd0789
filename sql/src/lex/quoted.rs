//! Quoted runs and comments. Every reading finds their ends the same way once it says
//! which character closes them, whether that character doubled stands for itself, and
//! whether comments nest; `None` is a run left open at the end of the text.

/// The end (past the closing character) of a run closed by `close` whose body starts at
/// `from`, the closing character doubled standing for itself: `'it''s'`, `"a""b"`,
/// `[a]]b]`.
pub(super) fn doubled(bytes: &[u8], mut from: usize, close: u8) -> Option<usize> {
    while let Some(at) = memchr::memchr(close, &bytes[from.min(bytes.len())..]) {
        let j = from + at;
        if bytes.get(j + 1) == Some(&close) {
            from = j + 2;
            continue;
        }
        return Some(j + 1);
    }
    None
}

/// The end of PostgreSQL's `E'...'` whose body starts at `from`: a backslash escapes the
/// character after it, and `''` is a quote.
pub(super) fn backslashed(bytes: &[u8], mut from: usize) -> Option<usize> {
    while let Some(at) = memchr::memchr2(b'\\', b'\'', &bytes[from.min(bytes.len())..]) {
        let j = from + at;
        match bytes[j] {
            b'\\' => from = j + 2,
            _ if bytes.get(j + 1) == Some(&b'\'') => from = j + 2,
            _ => return Some(j + 1),
        }
    }
    None
}

/// The end of a `/*` comment whose body starts at `from`. PostgreSQL and SQL Server
/// nest block comments (`nests`): a `/*` inside opens one more level; SQLite does not.
pub(super) fn block_comment_end(bytes: &[u8], from: usize, nests: bool) -> Option<usize> {
    let mut depth = 1usize;
    let mut i = from;
    while depth > 0 {
        let j = i + memchr::memchr2(b'/', b'*', &bytes[i.min(bytes.len())..])?;
        if nests && bytes[j] == b'/' && bytes.get(j + 1) == Some(&b'*') {
            depth += 1;
            i = j + 2;
        } else if bytes[j] == b'*' && bytes.get(j + 1) == Some(&b'/') {
            depth -= 1;
            i = j + 2;
        } else {
            i = j + 1;
        }
    }
    Some(i)
}

/// The end of a `--` comment starting at `from`: the next line feed, or with
/// `carriage_return` (PostgreSQL, SQL Server) the next carriage return if it comes
/// first.
pub(super) fn line_comment_end(bytes: &[u8], from: usize, carriage_return: bool) -> usize {
    let rest = &bytes[from..];
    let found = if carriage_return {
        memchr::memchr2(b'\n', b'\r', rest)
    } else {
        memchr::memchr(b'\n', rest)
    };
    found.map_or(bytes.len(), |n| from + n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ends_of_quoted_runs_and_comments() {
        assert_eq!(doubled(b"'it''s' x", 1, b'\''), Some(7));
        assert_eq!(doubled(b"'open", 1, b'\''), None);
        assert_eq!(doubled(b"'x''", 1, b'\''), None);
        assert_eq!(backslashed(b"E'\\'' x", 2), Some(5));
        assert_eq!(backslashed(b"E'\\'", 2), None);
        assert_eq!(block_comment_end(b"/* /* */ */x", 2, true), Some(11));
        assert_eq!(block_comment_end(b"/* /* */ */x", 2, false), Some(8));
        assert_eq!(block_comment_end(b"/* /* */", 2, true), None);
        assert_eq!(block_comment_end(b"/*/", 2, false), None);
        assert_eq!(line_comment_end(b"-- a\rb\nc", 0, true), 4);
        assert_eq!(line_comment_end(b"-- a\rb\nc", 0, false), 6);
        assert_eq!(line_comment_end(b"-- a", 0, false), 4);
    }
}
