//! Reading source files: decoding, SQL text, and SQL inside Rust string literals.

pub mod rust;

use std::borrow::Cow;

/// Files larger than this are not source code and are reported instead of read.
pub const MAX_FILE_SIZE: usize = 8 * 1024 * 1024;

/// Why a file's bytes are not source text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Undecodable {
    /// Larger than [`MAX_FILE_SIZE`].
    TooLarge(usize),
    /// Contains NUL bytes without a UTF-16 byte order mark.
    Binary,
    /// Not valid in the encoding its byte order mark (or its absence: UTF-8) announces.
    InvalidEncoding(&'static str),
}

impl std::fmt::Display for Undecodable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Undecodable::TooLarge(size) => {
                write!(
                    f,
                    "{size} bytes is larger than the {MAX_FILE_SIZE}-byte limit for source files"
                )
            }
            Undecodable::Binary => {
                f.write_str("binary content (NUL bytes) without a UTF-16 byte order mark")
            }
            Undecodable::InvalidEncoding(encoding) => write!(f, "not valid {encoding}"),
        }
    }
}

/// Decodes a file's bytes: UTF-8 with or without a byte order mark, or UTF-16 LE/BE with
/// one. The byte order mark is removed.
pub fn decode(bytes: &[u8]) -> Result<Cow<'_, str>, Undecodable> {
    if bytes.len() > MAX_FILE_SIZE {
        return Err(Undecodable::TooLarge(bytes.len()));
    }
    if let Some((encoding, bom)) = encoding_rs::Encoding::for_bom(bytes) {
        let body = &bytes[bom..];
        return encoding
            .decode_without_bom_handling_and_without_replacement(body)
            .ok_or(Undecodable::InvalidEncoding(encoding.name()));
    }
    if memchr::memchr(0, bytes).is_some() {
        return Err(Undecodable::Binary);
    }
    std::str::from_utf8(bytes)
        .map(Cow::Borrowed)
        .map_err(|_| Undecodable::InvalidEncoding("UTF-8"))
}

/// [`decode`] taking ownership of the bytes: UTF-8 without a byte order mark (the usual
/// case) becomes the `String` without a copy.
pub fn decode_owned(bytes: Vec<u8>) -> Result<String, Undecodable> {
    if bytes.len() > MAX_FILE_SIZE || encoding_rs::Encoding::for_bom(&bytes).is_some() {
        return decode(&bytes).map(Cow::into_owned);
    }
    if memchr::memchr(0, &bytes).is_some() {
        return Err(Undecodable::Binary);
    }
    String::from_utf8(bytes).map_err(|_| Undecodable::InvalidEncoding("UTF-8"))
}

/// Maps byte offsets of a text to 1-based line and character column.
#[derive(Debug, Clone)]
pub struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    /// Indexes the line starts of `text`.
    pub fn new(text: &str) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
        LineIndex { starts }
    }

    /// The 1-based line of a byte offset.
    pub fn line(&self, offset: usize) -> u32 {
        (self.starts.partition_point(|&s| s <= offset)) as u32
    }

    /// The 1-based line and 1-based character column of a byte offset.
    pub fn position(&self, text: &str, offset: usize) -> crate::diagnostic::Position {
        let offset = offset.min(text.len());
        let line = self.line(offset);
        let start = self.starts[line as usize - 1];
        let column = text
            .get(start..offset)
            .map_or(offset - start, |s| s.chars().count()) as u32
            + 1;
        crate::diagnostic::Position { line, column }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_boms() {
        assert_eq!(decode(b"\xEF\xBB\xBFselect").unwrap(), "select");
        let utf16: Vec<u8> = [0xFF, 0xFE]
            .into_iter()
            .chain("sé".encode_utf16().flat_map(u16::to_le_bytes))
            .collect();
        assert_eq!(decode(&utf16).unwrap(), "sé");
        let utf16be: Vec<u8> = [0xFE, 0xFF]
            .into_iter()
            .chain("go".encode_utf16().flat_map(u16::to_be_bytes))
            .collect();
        assert_eq!(decode(&utf16be).unwrap(), "go");
    }

    #[test]
    fn decode_owned_agrees_with_decode() {
        let utf16: Vec<u8> = [0xFF, 0xFE]
            .into_iter()
            .chain("sé".encode_utf16().flat_map(u16::to_le_bytes))
            .collect();
        let cases: [&[u8]; 7] = [
            b"select",
            b"\xEF\xBB\xBFselect",
            &utf16,
            b"a\0b",
            b"\xC3\x28",
            b"",
            &[0xFF, 0xFE, 0x00],
        ];
        for bytes in cases {
            assert_eq!(
                decode_owned(bytes.to_vec()),
                decode(bytes).map(Cow::into_owned),
                "{bytes:?}"
            );
        }
        assert_eq!(
            decode_owned(vec![b' '; MAX_FILE_SIZE + 1]),
            Err(Undecodable::TooLarge(MAX_FILE_SIZE + 1))
        );
    }

    #[test]
    fn rejects_binary_and_invalid() {
        assert_eq!(decode(b"a\0b"), Err(Undecodable::Binary));
        assert_eq!(
            decode(b"\xC3\x28"),
            Err(Undecodable::InvalidEncoding("UTF-8"))
        );
        assert!(matches!(
            decode(&vec![b' '; MAX_FILE_SIZE + 1]),
            Err(Undecodable::TooLarge(_))
        ));
    }

    #[test]
    fn positions_count_characters() {
        let text = "ab\néé x";
        let index = LineIndex::new(text);
        let x = text.find('x').unwrap();
        assert_eq!(
            index.position(text, x),
            crate::diagnostic::Position { line: 2, column: 4 }
        );
        assert_eq!(
            index.position(text, 0),
            crate::diagnostic::Position { line: 1, column: 1 }
        );
    }
}
