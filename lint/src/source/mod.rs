//! Reading source files: decoding, SQL text, and SQL inside Rust string literals.

pub mod rust;

use std::borrow::Cow;
use std::ops::Range;

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

/// Maps byte offsets of a text to 1-based line and character column, and back.
///
/// Every query costs at most a binary search and a count over [`CHECKPOINT`] bytes, so
/// positions of many findings on one very long line cost time linear in the findings,
/// not findings times line length.
#[derive(Debug, Clone)]
pub struct LineIndex {
    starts: Vec<usize>,
    /// Characters before byte `k * CHECKPOINT`, for every `k`; built on the first query
    /// that would otherwise count more than `CHECKPOINT` bytes.
    checkpoints: std::sync::OnceLock<Vec<usize>>,
}

/// The distance, in bytes, between two character-count checkpoints of a [`LineIndex`].
pub const CHECKPOINT: usize = 4096;

/// Characters in `bytes`, a slice of UTF-8 that may begin or end inside a character:
/// the bytes that are not continuation bytes.
fn char_starts(bytes: &[u8]) -> usize {
    bytes.iter().filter(|b| (**b as i8) >= -0x40).count()
}

impl LineIndex {
    /// Indexes the line starts of `text`.
    pub fn new(text: &str) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
        LineIndex {
            starts,
            checkpoints: std::sync::OnceLock::new(),
        }
    }

    /// The 1-based line of a byte offset.
    pub fn line(&self, offset: usize) -> u32 {
        (self.starts.partition_point(|&s| s <= offset)) as u32
    }

    /// The byte range of a 1-based line, without its line feed; `None` past the end.
    pub fn line_range(&self, text: &str, line: u32) -> Option<Range<usize>> {
        let start = *self.starts.get((line as usize).checked_sub(1)?)?;
        let end = self
            .starts
            .get(line as usize)
            .map_or(text.len(), |next| next - 1);
        Some(start..end.max(start))
    }

    fn checkpoints(&self, text: &str) -> &[usize] {
        self.checkpoints.get_or_init(|| {
            let mut total = 0;
            let mut out = vec![0];
            for block in text.as_bytes().chunks(CHECKPOINT) {
                total += char_starts(block);
                out.push(total);
            }
            out
        })
    }

    /// Characters before byte `offset` (a character boundary) in the whole text.
    fn chars_before(&self, text: &str, offset: usize) -> usize {
        let block = offset / CHECKPOINT;
        self.checkpoints(text)[block] + char_starts(&text.as_bytes()[block * CHECKPOINT..offset])
    }

    /// Characters in `text[from..to]`, both character boundaries.
    fn chars_between(&self, text: &str, from: usize, to: usize) -> usize {
        if to - from <= CHECKPOINT {
            char_starts(&text.as_bytes()[from..to])
        } else {
            self.chars_before(text, to) - self.chars_before(text, from)
        }
    }

    /// The 1-based line and 1-based character column of a byte offset.
    pub fn position(&self, text: &str, offset: usize) -> crate::diagnostic::Position {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.line(offset);
        let start = self.starts[line as usize - 1];
        let column = self.chars_between(text, start, offset) as u32 + 1;
        crate::diagnostic::Position { line, column }
    }

    /// The byte offset of a 1-based line and 1-based character column, clamped to the
    /// line's end; `None` for a line past the end of the text.
    pub fn offset(&self, text: &str, line: u32, column: u32) -> Option<usize> {
        let range = self.line_range(text, line)?;
        let wanted = column.max(1) as usize - 1;
        let bytes = text.as_bytes();
        // Short distances are walked; long ones start from the checkpoint before them.
        let mut at = range.start;
        let mut left = wanted;
        if wanted > CHECKPOINT {
            let target = self.chars_before(text, range.start) + wanted;
            let checkpoints = self.checkpoints(text);
            let block = checkpoints
                .partition_point(|&c| c <= target)
                .saturating_sub(1);
            let block_start = (block * CHECKPOINT).max(range.start);
            at = block_start;
            left = target - self.chars_before(text, block_start);
        }
        while left > 0 && at < range.end {
            at += 1;
            while at < range.end && (bytes[at] as i8) < -0x40 {
                at += 1;
            }
            left -= 1;
        }
        Some(at.min(range.end))
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

    /// Positions on a long line with multi-byte characters, and the offsets they map
    /// back to, agree with counting characters from the line's start.
    #[test]
    fn positions_on_long_lines_agree_with_counting() {
        let line: String = (0..3 * CHECKPOINT)
            .map(|i| if i % 7 == 0 { 'é' } else { 'x' })
            .collect();
        let text = format!("first\n{line}\nlast");
        let index = LineIndex::new(&text);
        for (offset, _) in text.char_indices().step_by(331) {
            let position = index.position(&text, offset);
            let start = index.line_range(&text, position.line).unwrap().start;
            assert_eq!(
                position.column as usize,
                text[start..offset].chars().count() + 1
            );
            assert_eq!(
                index.offset(&text, position.line, position.column),
                Some(offset)
            );
        }
        assert_eq!(index.offset(&text, 9, 1), None);
        assert_eq!(index.offset(&text, 3, 99), Some(text.len()));
    }

    /// Many findings on one 8 MB line: each position costs a bounded count, not the
    /// line's length (was 2,000 x 4 MB on average).
    #[test]
    fn many_positions_on_one_huge_line_are_fast() {
        let text = "é".repeat(4 * 1024 * 1024);
        let index = LineIndex::new(&text);
        let started = std::time::Instant::now();
        let mut sum = 0u64;
        for offset in (0..text.len()).step_by((text.len() / 2_000) & !1) {
            sum += u64::from(index.position(&text, offset).column);
        }
        assert!(sum > 0);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
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
