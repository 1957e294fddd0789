//! Sets of keywords, matched against a word's bytes ignoring ASCII case. Whether a
//! token is one of them is the lexer's to say (`lexer::is_any_word`).

/// Keywords longer than this are not supported (none is).
const MAX_LEN: usize = 31;

/// Keywords matched ignoring ASCII case. A table of the (length, first letter) pairs
/// that occur rules out nearly every other word with one lookup, before any comparison.
#[derive(Debug)]
pub(crate) struct WordSet {
    words: &'static [&'static str],
    /// Bit `letter_bit(first byte)` of `starts[len]`: some word has `len` bytes and that
    /// first letter.
    starts: [u32; MAX_LEN + 1],
}

/// `a`..`z` in either case to 0..25; any other byte to 31.
const fn letter_bit(b: u8) -> u32 {
    let lower = b | 0x20;
    if lower.is_ascii_lowercase() {
        (lower - b'a') as u32
    } else {
        31
    }
}

impl WordSet {
    /// The set of `words`, each 1 to 31 bytes long (checked at compile time).
    pub(crate) const fn new(words: &'static [&'static str]) -> WordSet {
        let mut starts = [0u32; MAX_LEN + 1];
        let mut i = 0;
        while i < words.len() {
            let word = words[i].as_bytes();
            assert!(!word.is_empty() && word.len() <= MAX_LEN);
            starts[word.len()] |= 1 << letter_bit(word[0]);
            i += 1;
        }
        WordSet { words, starts }
    }

    /// Whether `word` is one of the words, ignoring ASCII case.
    #[inline(always)]
    pub(crate) fn contains(&self, word: &[u8]) -> bool {
        let Some(&first) = word.first() else {
            return false;
        };
        word.len() <= MAX_LEN
            && self.starts[word.len()] & (1 << letter_bit(first)) != 0
            && self
                .words
                .iter()
                .any(|w| w.as_bytes().eq_ignore_ascii_case(word))
    }
}

/// The keywords of the statements the rules examine.
pub(crate) const STATEMENT_WORDS: WordSet = WordSet::new(&[
    "UPDATE", "DELETE", "MERGE", "INSERT", "REPLACE", "GRANT", "TRUNCATE",
]);

/// A [`WordSet`] of literal words, built at compile time: `words!["SET", "STATISTICS"]`.
macro_rules! words {
    ($($word:literal),+ $(,)?) => {
        &const { $crate::words::WordSet::new(&[$($word),+]) }
    };
}
pub(crate) use words;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_exactly_the_words_in_any_case() {
        const SET: WordSet = WordSet::new(&["SELECT", "SET", "_x", "é"]);
        for word in ["select", "SeLeCt", "SET", "set", "_X", "é"] {
            assert!(SET.contains(word.as_bytes()), "{word}");
        }
        for word in ["", "SELECTS", "SE", "sex", "[set]", "É", "selecT ", "x"] {
            assert!(!SET.contains(word.as_bytes()), "{word}");
        }
        assert!(!SET.contains("x".repeat(40).as_bytes()));
    }
}
