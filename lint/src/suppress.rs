//! Suppression comments: `-- fenced-lint: allow(RULE) reason` (SQL) and
//! `// fenced-lint: allow(RULE) reason` (Rust), on the line before the statement.
//!
//! Parsed strictly: a comment mentioning `fenced-lint:` that does not parse, or names an
//! unknown rule, is `malformed-suppression`; one without a reason is
//! `suppression-without-reason` (it still suppresses, so that one mistake is one
//! finding); one that suppresses nothing is `unused-suppression`.

use std::ops::Range;

use crate::rules::Rule;

/// The marker that makes a comment a suppression.
pub const MARKER: &str = "fenced-lint:";

/// A parsed suppression comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suppression {
    /// Byte range of the comment in the file.
    pub range: Range<usize>,
    /// The 1-based line the comment is on; it applies to statements starting on the next line.
    pub line: u32,
    /// The rules it allows.
    pub rules: Vec<Rule>,
    /// The reason given, if any.
    pub reason: Option<String>,
}

/// What a suppression comment turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// A well-formed suppression.
    Suppression(Suppression),
    /// A comment that mentions the marker but does not parse; the message says why.
    Malformed(Range<usize>, String),
}

/// Parses a comment's text (`--` or `//` already included). Returns `None` when the
/// comment is not meant as a suppression (does not start with the marker).
pub fn parse_comment(comment: &str, range: Range<usize>, line: u32) -> Option<Parsed> {
    let body = comment.trim_start_matches(['-', '/']).trim_start();
    let rest = body.strip_prefix(MARKER)?.trim_start();
    let malformed = |why: &str| Some(Parsed::Malformed(range.clone(), why.to_owned()));
    let Some(after_allow) = rest.strip_prefix("allow(") else {
        return malformed("expected `fenced-lint: allow(RULE) reason`");
    };
    let Some(close) = after_allow.find(')') else {
        return malformed("expected `)` after the rule name");
    };
    let mut rules = Vec::new();
    for name in after_allow[..close].split(',') {
        let name = name.trim();
        match name.parse::<Rule>() {
            Ok(rule) => rules.push(rule),
            Err(_) if name.is_empty() => return malformed("expected a rule name inside `allow()`"),
            Err(_) => {
                return malformed(&format!(
                    "unknown rule `{name}`; `fenced-lint explain` lists the rules"
                ));
            }
        }
    }
    let reason = after_allow[close + 1..].trim();
    Some(Parsed::Suppression(Suppression {
        range,
        line,
        rules,
        reason: (!reason.is_empty()).then(|| reason.to_owned()),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_strictly() {
        let parsed = parse_comment(
            "-- fenced-lint: allow(unfenced-write, FL007) legacy backfill",
            0..10,
            3,
        );
        let Some(Parsed::Suppression(s)) = parsed else {
            panic!("{parsed:?}")
        };
        assert_eq!(s.rules, [Rule::UnfencedWrite, Rule::FencedRowDelete]);
        assert_eq!(s.reason.as_deref(), Some("legacy backfill"));
        let Some(Parsed::Suppression(s)) =
            parse_comment("// fenced-lint: allow(unfenced-write)", 0..1, 1)
        else {
            panic!()
        };
        assert_eq!(s.reason, None);
        assert!(
            matches!(parse_comment("-- fenced-lint: allow(require-fence) x", 0..1, 1), Some(Parsed::Malformed(_, m)) if m.contains("require-fence"))
        );
        assert!(matches!(
            parse_comment("-- fenced-lint: ignore everything", 0..1, 1),
            Some(Parsed::Malformed(..))
        ));
        assert!(matches!(
            parse_comment("-- fenced-lint: allow(unfenced-write", 0..1, 1),
            Some(Parsed::Malformed(..))
        ));
        assert_eq!(parse_comment("-- an ordinary comment", 0..1, 1), None);
    }
}
