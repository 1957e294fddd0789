//! The search that decides whether a text is worth parsing: any of a few words, ignoring
//! ASCII case.
//!
//! An ASCII-case-insensitive automaton is slow on source text (every letter of a pattern
//! becomes two, and words such as `GRANT` start with letters that are everywhere), so the
//! text is folded to lower case into a buffer reused by the thread, and the lower-cased
//! words are searched case-sensitively, which runs at the speed of the packed (SIMD)
//! search. The result is the same as an ASCII-case-insensitive search: a word in any
//! case, inside `[brackets]` or `"quotes"`, is found.

use std::cell::RefCell;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

/// Texts are folded in pieces of this size, so the buffer stays small and in cache and a
/// match early in a large file ends the search early.
const CHUNK: usize = 64 * 1024;

thread_local! {
    static FOLDED: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Words searched for ignoring ASCII case.
#[derive(Debug, Clone)]
pub(crate) struct Words {
    /// The words, lower-cased, sorted, without duplicates.
    words: Vec<String>,
    /// The lower-cased words, case-sensitive; `None` when there are no words.
    automaton: Option<AhoCorasick>,
    /// The longest word's length in bytes: chunks overlap by one less, so a word across
    /// two chunks is found.
    longest: usize,
}

impl Words {
    /// Compiles the words. Empty words are ignored (they would match everything).
    pub(crate) fn new<S: AsRef<str>>(words: impl IntoIterator<Item = S>) -> Words {
        let mut lowered: Vec<String> = words
            .into_iter()
            .map(|w| w.as_ref().to_ascii_lowercase())
            .filter(|w| !w.is_empty())
            .collect();
        lowered.sort();
        lowered.dedup();
        let longest = lowered.iter().map(String::len).max().unwrap_or(0);
        let automaton = if lowered.is_empty() {
            None
        } else {
            AhoCorasickBuilder::new()
                .match_kind(MatchKind::LeftmostFirst)
                .build(&lowered)
                .ok()
        };
        Words {
            words: lowered,
            automaton,
            longest,
        }
    }

    /// These words less those of `other`.
    pub(crate) fn without(&self, other: &Words) -> Words {
        Words::new(
            self.words
                .iter()
                .filter(|w| other.words.binary_search(w).is_err()),
        )
    }

    /// Whether there are words to search for.
    pub(crate) fn is_empty(&self) -> bool {
        self.automaton.is_none()
    }

    /// Whether `text` contains any of the words, ignoring ASCII case.
    pub(crate) fn is_match(&self, text: &str) -> bool {
        let [found] = search([self], text);
        found
    }
}

/// For each set of words, whether `text` contains any of them, ignoring ASCII case: the
/// text is folded once for all the sets.
pub(crate) fn search<const N: usize>(sets: [&Words; N], text: &str) -> [bool; N] {
    let mut found = [false; N];
    let mut wanted = sets.map(|set| set.automaton.is_some());
    if !wanted.contains(&true) {
        return found;
    }
    let bytes = text.as_bytes();
    let overlap = sets
        .iter()
        .map(|s| s.longest)
        .max()
        .unwrap_or(0)
        .saturating_sub(1);
    FOLDED.with(|folded| {
        // A re-entrant call (none today) gets its own buffer rather than a panic.
        let mut own = Vec::new();
        let mut guard = folded.try_borrow_mut();
        let buffer = match &mut guard {
            Ok(buffer) => &mut **buffer,
            Err(_) => &mut own,
        };
        let mut start = 0;
        loop {
            let end = (start + CHUNK).min(bytes.len());
            buffer.clear();
            // Copied and folded in one pass.
            buffer.extend(bytes[start..end].iter().map(u8::to_ascii_lowercase));
            for (i, set) in sets.iter().enumerate() {
                if let (true, Some(automaton)) = (wanted[i], &set.automaton)
                    && automaton.is_match(buffer.as_slice())
                {
                    found[i] = true;
                    wanted[i] = false;
                }
            }
            if end == bytes.len() || !wanted.contains(&true) {
                return found;
            }
            start = (end - overlap).max(start + 1);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_words_in_any_case() {
        let words = Words::new(["ReportPublication", "GRANT"]);
        assert!(words.is_match("in [dbo].[REPORTpublication] x"));
        assert!(words.is_match("\"reportpublication\""));
        assert!(words.is_match("we gRaNt it"));
        assert!(!words.is_match("UPDATE dbo.Orders SET x = 1"));
        assert!(!words.is_match("ReportPublicatio"));
        assert!(!words.is_match(""));
    }

    #[test]
    fn finds_a_word_across_chunks() {
        for offset in [CHUNK - 8, CHUNK - 3, CHUNK - 1, CHUNK, 3 * CHUNK - 2] {
            let mut text = "x".repeat(offset);
            text.push_str("ReportPublication");
            text.push_str(&"y".repeat(100));
            assert!(
                Words::new(["reportpublication"]).is_match(&text),
                "at {offset}"
            );
            assert!(!Words::new(["reportpublications"]).is_match(&text));
        }
    }

    #[test]
    fn sets_are_searched_together() {
        let tables = Words::new(["ReportPublication", "GRANT"]);
        let columns = Words::new(["Generation"]);
        assert_eq!(
            search([&columns, &tables], "create table t (GENERATION bigint)"),
            [true, false]
        );
        assert_eq!(
            search([&columns, &tables], "to grant reportpublication"),
            [false, true]
        );
        let far = format!("generation{}ReportPublication", " ".repeat(3 * CHUNK));
        assert_eq!(search([&columns, &tables], &far), [true, true]);
        assert_eq!(search([&columns, &tables], "select 1"), [false, false]);
    }

    #[test]
    fn without_leaves_the_new_words() {
        let before = Words::new(["GRANT", "fenced-lint:"]);
        let after = Words::new(["Grant", "fenced-lint:", "Jobs"]);
        let new = after.without(&before);
        assert!(new.is_match("see JOBS here"));
        assert!(!new.is_match("a GRANT, fenced-lint: allow"));
        assert!(after.without(&after).is_empty());
    }

    #[test]
    fn no_words_match_nothing() {
        let words = Words::new(Vec::<String>::new());
        assert!(words.is_empty());
        assert!(!words.is_match("anything"));
        assert!(Words::new([""]).is_empty());
    }
}
