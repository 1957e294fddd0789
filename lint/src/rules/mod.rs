//! The rules, one file each, and the table of their stable codes.
//!
//! A code is never reused and never renumbered: other tools, suppressions and CI
//! configurations refer to rules by name and by code.

use std::fmt;
use std::str::FromStr;

use crate::diagnostic::Severity;

macro_rules! rules {
    ($( $variant:ident => $code:literal, $name:literal, $severity:ident, $summary:literal; )*) => {
        /// Every rule the lint knows, with its stable code and kebab-case name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[non_exhaustive]
        pub enum Rule {
            $(
                #[doc = $summary]
                $variant,
            )*
        }

        impl Rule {
            /// All rules, in code order.
            pub const ALL: &'static [Rule] = &[$(Rule::$variant),*];

            /// The stable code, such as `FL001`.
            pub fn code(self) -> &'static str {
                match self { $(Rule::$variant => $code,)* }
            }

            /// The name used in suppressions and on the command line, such as `unfenced-write`.
            pub fn name(self) -> &'static str {
                match self { $(Rule::$variant => $name,)* }
            }

            /// The severity findings of this rule are reported at.
            pub fn severity(self) -> Severity {
                match self { $(Rule::$variant => Severity::$severity,)* }
            }

            /// One line saying what the rule flags.
            pub fn summary(self) -> &'static str {
                match self { $(Rule::$variant => $summary,)* }
            }
        }
    };
}

rules! {
    UnfencedWrite => "FL001", "unfenced-write", Error,
        "A write to a fenced table whose top-level WHERE lacks the key, generation, owner or database-clock expiry predicate.";
    FenceInDisjunction => "FL002", "fence-in-disjunction", Error,
        "Fence predicates present only under OR or NOT, where they do not constrain the write.";
    ClientClockExpiry => "FL003", "client-clock-expiry", Error,
        "The lease expiry compared with a parameter, variable or literal instead of the database clock.";
    UncheckedAcquire => "FL004", "unchecked-acquire", Error,
        "The generation incremented without requiring the lease to be free.";
    GenerationRewind => "FL005", "generation-rewind", Error,
        "The generation assigned anything other than generation + 1.";
    RevivingRenewal => "FL006", "reviving-renewal", Error,
        "The lease expiry extended without requiring the lease to be still unexpired.";
    FencedRowDelete => "FL007", "fenced-row-delete", Error,
        "A DELETE on a fenced table, which destroys the generation the fence depends on.";
    FencedTableGrant => "FL008", "fenced-table-grant", Error,
        "A GRANT of UPDATE, INSERT, DELETE, ALL or CONTROL on a fenced table.";
    UnanalysedWrite => "FL009", "unanalysed-write", Error,
        "A statement that writes and mentions a fenced table but could not be analysed.";
    SuppressionWithoutReason => "FL010", "suppression-without-reason", Error,
        "A suppression comment that gives no reason.";
    UnusedSuppression => "FL011", "unused-suppression", Warning,
        "A suppression comment that suppresses nothing.";
    UnreadableFile => "FL012", "unreadable-file", Error,
        "A file that could not be read or decoded as source text, or is too large to be source.";
    MalformedSuppression => "FL013", "malformed-suppression", Error,
        "A suppression comment that does not parse or names an unknown rule.";
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error for a rule name or code that does not exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown rule `{0}`; `fenced-lint explain` lists the rules")]
pub struct UnknownRule(pub String);

impl FromStr for Rule {
    type Err = UnknownRule;

    /// Accepts the kebab-case name or the code, ignoring ASCII case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Rule::ALL
            .iter()
            .copied()
            .find(|rule| rule.name().eq_ignore_ascii_case(s) || rule.code().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownRule(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_names_are_unique() {
        let mut codes: Vec<_> = Rule::ALL.iter().map(|r| r.code()).collect();
        let mut names: Vec<_> = Rule::ALL.iter().map(|r| r.name()).collect();
        codes.sort_unstable();
        codes.dedup();
        names.sort_unstable();
        names.dedup();
        assert_eq!(codes.len(), Rule::ALL.len());
        assert_eq!(names.len(), Rule::ALL.len());
    }

    #[test]
    fn parses_names_and_codes() {
        assert_eq!("unfenced-write".parse::<Rule>(), Ok(Rule::UnfencedWrite));
        assert_eq!("fl007".parse::<Rule>(), Ok(Rule::FencedRowDelete));
        assert!("require-fence".parse::<Rule>().is_err());
    }
}
