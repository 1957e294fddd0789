//! The rules, one file each, and the table of their stable codes.
//!
//! A code is never reused and never renumbered: other tools, suppressions and CI
//! configurations refer to rules by name and by code.
//!
//! # What the rules consider
//!
//! Every statement that writes a fenced table is classified by what it assigns:
//!
//! | it assigns | it is | its top-level `AND`-ed `WHERE` must require |
//! |---|---|---|
//! | `generation = generation + 1` | an acquisition | key, and the lease free (`expiry IS NULL OR expiry <= clock`) |
//! | only `owner = NULL` and/or `expiry = NULL` | a release | key, generation, owner |
//! | the expiry (not `NULL`), generation untouched | a renewal | key, generation, owner, `expiry > clock`, `epoch = (<epoch table>)` |
//! | anything else | a fenced write | key, generation, owner, `expiry > clock`, `epoch = (<epoch table>)` |
//!
//! The epoch conjunct, `epoch = (SELECT ... FROM <epoch table> ...)`, is required only of
//! a table with an epoch column (the default; `epoch = false` in the configuration says
//! there is none), and only once the other predicates are there (`epochless-write`).
//!
//! The update arm of `MERGE ... WHEN MATCHED THEN UPDATE` is checked with the `ON`
//! condition and the arm's `AND` condition together; the update arm of
//! `INSERT ... ON CONFLICT (key) DO UPDATE` with its `WHERE`, the conflict target
//! counting as `key = value`. An `UPDATE ... FROM` is checked with its `WHERE` and the
//! `ON` conditions of its inner joins (`JOIN`, `INNER JOIN`), which restrict the updated
//! rows as the `WHERE` does; the `ON` of an outer, cross or lateral join does not, and
//! neither does an `ON` the parser could not read to its end.
//!
//! `INSERT` into a fenced table provisions a row. It is fine when it leaves the generation
//! to its default or sets it to the literal `0` (in `VALUES` or a plain `SELECT` list); any other generation (a parameter, a
//! copy from a query) is `generation-rewind`, as are `INSERT OR REPLACE` and
//! `REPLACE INTO`, which delete the existing row first. An `INSERT` without a column list
//! (other than `DEFAULT VALUES`) is `unanalysed-write`: its values are positional, and the
//! lint does not know the table's column order. Owner and expiry given at insert time
//! are accepted: the row starts at generation 0, held by the inserter.
//!
//! A value is a parameter (`@x`, `$1`, `?`, `?1`, `:x`), a variable, a literal, or an
//! expression naming no fence column of the target; the database clock is
//! `SYSUTCDATETIME()`, `SYSDATETIME()`, `GETUTCDATE()`, `GETDATE()`, `CURRENT_TIMESTAMP`,
//! `now()`, `clock_timestamp()`, `statement_timestamp()`, `transaction_timestamp()`,
//! `LOCALTIMESTAMP`, SQLite's `unixepoch()`/`julianday()`/`strftime()`/`datetime()` of
//! `'now'` (or `unixepoch('subsec')`), and arithmetic on these.

mod fence;

mod client_clock_expiry;
mod epochless_write;
mod fence_in_disjunction;
mod fenced_row_delete;
mod fenced_table_grant;
mod generation_rewind;
mod malformed_suppression;
mod reviving_renewal;
mod suppression_without_reason;
mod unanalysed_write;
mod unchecked_acquire;
mod unfenced_write;
mod unreadable_file;
mod unused_suppression;

use std::ops::Range;

use crate::config::TableSpec;
use crate::sql::Statement;

use std::fmt;
use std::str::FromStr;

use crate::severity::Severity;

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
    EpochlessWrite => "FL014", "epochless-write", Error,
        "A fenced write or renewal whose top-level WHERE does not compare the epoch column with the epoch table's current epoch.";
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

impl Rule {
    /// The rule's documentation: What it does / Why is this bad? / Example / Use instead.
    pub fn documentation(self) -> &'static str {
        match self {
            Rule::UnfencedWrite => unfenced_write::DOC,
            Rule::FenceInDisjunction => fence_in_disjunction::DOC,
            Rule::ClientClockExpiry => client_clock_expiry::DOC,
            Rule::UncheckedAcquire => unchecked_acquire::DOC,
            Rule::GenerationRewind => generation_rewind::DOC,
            Rule::RevivingRenewal => reviving_renewal::DOC,
            Rule::FencedRowDelete => fenced_row_delete::DOC,
            Rule::FencedTableGrant => fenced_table_grant::DOC,
            Rule::UnanalysedWrite => unanalysed_write::DOC,
            Rule::SuppressionWithoutReason => suppression_without_reason::DOC,
            Rule::UnusedSuppression => unused_suppression::DOC,
            Rule::UnreadableFile => unreadable_file::DOC,
            Rule::MalformedSuppression => malformed_suppression::DOC,
            Rule::EpochlessWrite => epochless_write::DOC,
        }
    }
}

/// A finding of a statement rule, before it is placed in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Finding {
    pub(crate) rule: Rule,
    /// Byte range in the SQL text; the statement's range unless the rule points closer.
    pub(crate) range: Range<usize>,
    pub(crate) table: Option<String>,
    pub(crate) message: String,
    pub(crate) help: Option<String>,
}

/// What a statement rule looks at.
pub(crate) struct Context<'a> {
    pub(crate) statement: &'a Statement,
    /// The fenced table the statement writes, if it writes one.
    pub(crate) table: Option<&'a TableSpec>,
    /// Facts about each update arm, when `table` is set.
    pub(crate) arms: Vec<fence::ArmFacts>,
    /// Every fenced table (for grants, which may name several).
    pub(crate) tables: &'a [TableSpec],
}

impl<'a> Context<'a> {
    /// The context of a statement whose target denotes the fenced table `table`.
    pub(crate) fn with_target(
        statement: &'a Statement,
        table: Option<&'a TableSpec>,
        tables: &'a [TableSpec],
    ) -> Context<'a> {
        let arms = table
            .map(|table| {
                statement
                    .updates
                    .iter()
                    .map(|arm| fence::facts(statement, table, arm))
                    .collect()
            })
            .unwrap_or_default();
        Context {
            statement,
            table,
            arms,
            tables,
        }
    }

    fn finding(&self, rule: Rule, message: String, help: Option<String>) -> Finding {
        Finding {
            rule,
            range: self.statement.range.clone(),
            table: self.table.map(TableSpec::display_name),
            message,
            help,
        }
    }
}

/// Runs every statement rule.
/// Runs every rule over a parsed statement. `target` is the fenced table its target
/// denotes, looked up by the caller.
pub(crate) fn check_statement(
    statement: &Statement,
    target: Option<&TableSpec>,
    tables: &[TableSpec],
) -> Vec<Finding> {
    let context = Context::with_target(statement, target, tables);
    let mut out = Vec::new();
    unfenced_write::check(&context, &mut out);
    fence_in_disjunction::check(&context, &mut out);
    client_clock_expiry::check(&context, &mut out);
    unchecked_acquire::check(&context, &mut out);
    generation_rewind::check(&context, &mut out);
    reviving_renewal::check(&context, &mut out);
    epochless_write::check(&context, &mut out);
    fenced_row_delete::check(&context, &mut out);
    fenced_table_grant::check(&context, &mut out);
    unanalysed_write::check(&context, &mut out);
    out
}

/// The fence columns an operation must constrain, as `(name, presence, predicate)`.
fn required(
    context: &Context<'_>,
    facts: &fence::ArmFacts,
) -> Vec<(&'static str, fence::Presence, String)> {
    let Some(table) = context.table else {
        return Vec::new();
    };
    // Placeholders written as the statement writes its parameters; numbered ones in
    // the order the advice lists them, for the predicates the statement lacks.
    let style = context.statement.param_style;
    let mut next = 0;
    let mut value = |present: fence::Presence, name: &str| {
        let index = if present == fence::Presence::Absent {
            next += 1;
            next - 1
        } else {
            0
        };
        style.placeholder(name, index)
    };
    let key = (
        "key",
        facts.key,
        format!("{} = {}", table.key, value(facts.key, "key")),
    );
    let generation = (
        "generation",
        facts.generation,
        format!(
            "{} = {}",
            table.generation,
            value(facts.generation, "generation")
        ),
    );
    let owner = (
        "owner",
        facts.owner,
        format!("{} = {}", table.owner, value(facts.owner, "owner")),
    );
    let unexpired = (
        "unexpired lease",
        facts.unexpired,
        format!("{} > <database clock>", table.expiry),
    );
    match facts.operation {
        fence::Operation::Acquire => vec![key],
        fence::Operation::Release => vec![key, generation, owner],
        fence::Operation::Renew | fence::Operation::Write => {
            vec![key, generation, owner, unexpired]
        }
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    //! The article's statements and a one-call checker for rule tests.

    use super::Rule;
    use crate::config::{Config, TableSpec};
    use crate::linter::Linter;

    pub(crate) const ACQUIRE: &str = "UPDATE dbo.ReportPublication
SET Generation = Generation + 1,
    LeaseOwner = @owner,
    LeaseUntilUtc = DATEADD(second, @leaseSeconds, SYSUTCDATETIME())
OUTPUT inserted.Generation
WHERE ReportId = @reportId
  AND (
      LeaseUntilUtc IS NULL
      OR LeaseUntilUtc <= SYSUTCDATETIME()
  );";

    pub(crate) const PUBLISH: &str = "UPDATE dbo.ReportPublication
SET Payload = @payload,
    PublishedGeneration = @generation,
    PublishedAtUtc = SYSUTCDATETIME()
WHERE ReportId = @reportId
  AND Generation = @generation
  AND LeaseOwner = @owner
  AND LeaseUntilUtc > SYSUTCDATETIME()
  AND LeaseEpoch = (SELECT Epoch FROM FencedEpoch WHERE Id = 1)
  AND PublishedGeneration < @generation;";

    pub(crate) const RELEASE: &str = "UPDATE dbo.ReportPublication
SET LeaseOwner = NULL,
    LeaseUntilUtc = NULL
WHERE ReportId = @reportId
  AND Generation = @generation
  AND LeaseOwner = @owner;";

    pub(crate) const RENEW: &str = "UPDATE dbo.ReportPublication
SET LeaseUntilUtc = DATEADD(second, @leaseSeconds, SYSUTCDATETIME())
WHERE ReportId = @reportId
  AND Generation = @generation
  AND LeaseOwner = @owner
  AND LeaseUntilUtc > SYSUTCDATETIME()
  AND LeaseEpoch = (SELECT Epoch FROM FencedEpoch WHERE Id = 1);";

    pub(crate) const PROVISION: &str = "INSERT INTO dbo.ReportPublication (ReportId, Generation, PublishedGeneration) VALUES (@reportId, 0, 0);";

    pub(crate) fn linter() -> Linter {
        let mut config = Config::default();
        config
            .tables
            .push(TableSpec::new("dbo.ReportPublication", "ReportId"));
        config.tables.push(TableSpec {
            expiry: "lease_until".into(),
            owner: "lease_owner".into(),
            generation: "generation".into(),
            epoch: Some("lease_epoch".into()),
            ..TableSpec::new("report_publication", "report_id")
        });
        Linter::new(&config)
    }

    /// The rules raised on a SQL text, in order.
    pub(crate) fn rules(sql: &str) -> Vec<Rule> {
        linter()
            .check_file(std::path::Path::new("t.sql"), sql.as_bytes())
            .diagnostics
            .into_iter()
            .map(|d| d.rule)
            .collect()
    }

    /// `cases! { RULE; name: "sql" => flagged?; ... }`: one test per case, asserting whether
    /// RULE is raised.
    macro_rules! cases {
        ($rule:expr; $( $name:ident: $sql:expr => $flagged:expr; )*) => {
            $(
                #[test]
                fn $name() {
                    let raised = $crate::rules::test_support::rules($sql);
                    assert_eq!(raised.contains(&$rule), $flagged, "{:?} on {}", raised, $sql);
                }
            )*
        };
    }
    pub(crate) use cases;

    /// Asserts the article's statements raise nothing.
    #[test]
    fn article_statements_are_silent() {
        for sql in [ACQUIRE, PUBLISH, RELEASE, RENEW, PROVISION] {
            assert_eq!(rules(sql), [], "{sql}");
        }
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

    /// The SQL block under `heading` in a rule's documentation.
    fn doc_sql(rule: Rule, heading: &str) -> &'static str {
        let doc = rule.documentation();
        let after = &doc[doc.find(heading).expect(heading)..];
        let start = after.find("```sql\n").expect("a SQL block") + "```sql\n".len();
        let end = after[start..].find("```").expect("the block's end");
        &after[start..start + end]
    }

    /// Each statement rule's example raises it, and what the documentation says to use
    /// instead raises nothing: advice that another rule flags is no advice.
    #[test]
    fn documented_examples_are_flagged_and_their_fixes_are_silent() {
        let statement_rules = [
            Rule::UnfencedWrite,
            Rule::FenceInDisjunction,
            Rule::ClientClockExpiry,
            Rule::UncheckedAcquire,
            Rule::GenerationRewind,
            Rule::RevivingRenewal,
            Rule::FencedRowDelete,
            Rule::FencedTableGrant,
            Rule::EpochlessWrite,
        ];
        for rule in statement_rules {
            let example = doc_sql(rule, "## Example");
            assert!(
                test_support::rules(example).contains(&rule),
                "{rule}: {example}"
            );
            let instead = doc_sql(rule, "## Use instead");
            assert_eq!(test_support::rules(instead), [], "{rule}: {instead}");
        }
    }

    #[test]
    fn parses_names_and_codes() {
        assert_eq!("unfenced-write".parse::<Rule>(), Ok(Rule::UnfencedWrite));
        assert_eq!("fl007".parse::<Rule>(), Ok(Rule::FencedRowDelete));
        assert!("require-fence".parse::<Rule>().is_err());
    }
}
