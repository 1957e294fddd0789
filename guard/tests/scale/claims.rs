//! The claim checker: what the claimers recorded against the rows' final generations.
//!
//! Properties, each with its own [`Violation`]:
//!
//! 1. Each generation of each row was claimed by exactly one claimer
//!    ([`Violation::DoubleClaim`]).
//! 2. Every generation a row went through was claimed by someone who knows it: the
//!    generations recorded for a row are exactly 1 up to the row's generation in the
//!    database, none missing and none beyond ([`Violation::Unrecorded`],
//!    [`Violation::Beyond`]). A claim that took a row and did not return it, or returned
//!    one it did not take, breaks this.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// One row a claimer was given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claimed {
    pub worker: usize,
    pub key: i64,
    pub generation: i64,
}

/// One broken property.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Violation {
    /// Property 1: these claimers were all given this generation of this row.
    DoubleClaim {
        key: i64,
        generation: i64,
        workers: Vec<usize>,
    },
    /// Property 2: the row reached this generation in the database, but no claimer was
    /// given it.
    Unrecorded { key: i64, generation: i64 },
    /// Property 2: a claimer was given a generation the row never reached, or a row
    /// the database does not have.
    Beyond {
        key: i64,
        generation: i64,
        database: Option<i64>,
    },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::DoubleClaim {
                key,
                generation,
                workers,
            } => write!(
                f,
                "row {key}: generation {generation} was claimed by workers {workers:?}"
            ),
            Violation::Unrecorded { key, generation } => write!(
                f,
                "row {key}: generation {generation} is in the database, claimed by no one"
            ),
            Violation::Beyond {
                key,
                generation,
                database,
            } => write!(
                f,
                "row {key}: generation {generation} was claimed, the database has {database:?}"
            ),
        }
    }
}

/// Checks the claims against each row's generation in the database (`rows`: key and
/// generation of every row).
pub fn check(claims: &[Claimed], rows: &[(i64, i64)]) -> Vec<Violation> {
    let mut violations = Vec::new();
    let mut by_generation: BTreeMap<(i64, i64), Vec<usize>> = BTreeMap::new();
    for c in claims {
        by_generation
            .entry((c.key, c.generation))
            .or_default()
            .push(c.worker);
    }
    let database: BTreeMap<i64, i64> = rows.iter().copied().collect();
    for (&(key, generation), workers) in &by_generation {
        if workers.len() > 1 {
            violations.push(Violation::DoubleClaim {
                key,
                generation,
                workers: workers.clone(),
            });
        }
        let reached = database.get(&key).copied();
        if generation < 1 || reached.is_none_or(|g| generation > g) {
            violations.push(Violation::Beyond {
                key,
                generation,
                database: reached,
            });
        }
    }
    let recorded: BTreeSet<(i64, i64)> = by_generation.keys().copied().collect();
    for (&key, &reached) in &database {
        for generation in 1..=reached {
            if !recorded.contains(&(key, generation)) {
                violations.push(Violation::Unrecorded { key, generation });
            }
        }
    }
    violations
}

/// The first ten of `violations`, for a failed test's message.
pub fn first_ten(violations: &[Violation]) -> String {
    violations
        .iter()
        .take(10)
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claimed(worker: usize, key: i64, generation: i64) -> Claimed {
        Claimed {
            worker,
            key,
            generation,
        }
    }

    #[test]
    fn a_clean_history_passes() {
        let claims = [claimed(0, 1, 1), claimed(1, 2, 1), claimed(1, 1, 2)];
        assert_eq!(check(&claims, &[(1, 2), (2, 1), (3, 0)]), vec![]);
    }

    #[test]
    fn a_generation_given_to_two_claimers_is_caught() {
        let claims = [claimed(0, 1, 1), claimed(3, 1, 1)];
        assert_eq!(
            check(&claims, &[(1, 1)]),
            vec![Violation::DoubleClaim {
                key: 1,
                generation: 1,
                workers: vec![0, 3]
            }]
        );
    }

    #[test]
    fn a_claim_taken_but_not_returned_is_caught() {
        let claims = [claimed(0, 1, 1)];
        assert_eq!(
            check(&claims, &[(1, 2)]),
            vec![Violation::Unrecorded {
                key: 1,
                generation: 2
            }]
        );
    }

    #[test]
    fn a_claim_the_database_never_saw_is_caught() {
        let claims = [claimed(0, 1, 2), claimed(0, 9, 1)];
        let violations = check(&claims, &[(1, 1)]);
        assert!(violations.contains(&Violation::Beyond {
            key: 1,
            generation: 2,
            database: Some(1)
        }));
        assert!(violations.contains(&Violation::Beyond {
            key: 9,
            generation: 1,
            database: None
        }));
    }
}
