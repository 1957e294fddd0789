//! Claiming: acquiring up to `n` free rows among candidates in one statement, for
//! queue-shaped work ("any report that needs rebuilding", not one named key).
//!
//! ```
//! # #[cfg(feature = "sqlite")]
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use fenced_guard::{Candidates, ColumnType, Comparison, FencedTable, KeyType, Sqlite, Store, Value};
//!
//! let dir = tempfile::tempdir()?;
//! let table = FencedTable::builder()
//!     .key_type(KeyType::BigInt)
//!     .column("Queue", ColumnType::Text)
//!     .build()?;
//! let store = Store::new(Sqlite::open(dir.path().join("jobs.db")).await?, table);
//! store.create_schema().await?;
//! for job in 1..=5_i64 {
//!     store.provision(job).await?;
//! }
//!
//! // Up to three free rows of the table, each an ordinary lease.
//! let ttl = Duration::from_secs(30);
//! let leases = store.claim(&Candidates::any(), 3, ttl).await?;
//! assert_eq!(leases.len(), 3);
//! assert!(leases.iter().all(|lease| lease.generation() == 1));
//!
//! // The other two: held rows are not candidates.
//! let rest = store.claim(&Candidates::keys(1..=5_i64), 10, ttl).await?;
//! assert_eq!(rest.len(), 2);
//!
//! // A filter on the table's own declared columns: none of them is in a queue yet.
//! let none = Candidates::any().filter("Queue", Comparison::Eq, "reports");
//! assert!(store.claim(&none, 1, ttl).await?.is_empty());
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "sqlite"))]
//! # fn main() {}
//! ```

use std::borrow::Cow;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use tracing::Instrument;

use uuid::Uuid;

use crate::dialect;
use crate::dialect::batch::{self, ClaimPart};
use crate::error::{Error, Result};
use crate::executor::Executor;
use crate::lease::Lease;
use crate::store::{Store, ttl_millis};
use crate::table::{Identifier, KeyType};
use crate::value::{Key, Value};

pub(crate) mod filter;
pub(crate) mod start;

pub use filter::{Comparison, Test};

/// The most candidate keys one claim statement carries; a longer list is claimed from
/// in statements of this many keys, one after the other, until the limit is reached.
/// It keeps every statement under SQL Server's 2,100 parameters.
pub const MAX_KEYS_PER_STATEMENT: usize = 1024;

/// The most conditions a [`Candidates`] filter may have (each value is a parameter).
pub const MAX_CONDITIONS: usize = 64;

/// Which rows a [claim](Store::claim) may take, beside being free: every row of the
/// table ([`any`](Candidates::any)) or those of a key list ([`keys`](Candidates::keys)),
/// narrowed by a filter on the table's own declared columns (every condition must
/// hold). The filter is structured, not SQL: each column must be one the
/// [`FencedTable`](crate::FencedTable) declares, quoted as declared, and each value is
/// bound as a parameter. Comparisons follow each database's own rules (a text column's
/// collation on SQL Server, type affinity on SQLite).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Candidates {
    keys: Option<Vec<Key>>,
    conditions: Vec<(String, Condition)>,
}

#[derive(Clone, Debug, PartialEq)]
enum Condition {
    Compare(Comparison, Value),
    IsNull,
    IsNotNull,
}

impl Candidates {
    /// Every row of the table.
    pub fn any() -> Self {
        Candidates::default()
    }

    /// The rows under these keys (an empty list claims nothing, without a statement).
    pub fn keys<K: Into<Key>>(keys: impl IntoIterator<Item = K>) -> Self {
        Candidates {
            keys: Some(keys.into_iter().map(Into::into).collect()),
            conditions: Vec::new(),
        }
    }

    /// Only rows whose declared column `column` compares with `value` as `comparison`
    /// says. A `NULL` value is refused when claiming (it compares with nothing): use
    /// [`is_null`](Candidates::is_null).
    pub fn filter(
        mut self,
        column: impl Into<String>,
        comparison: Comparison,
        value: impl Into<Value>,
    ) -> Self {
        self.conditions
            .push((column.into(), Condition::Compare(comparison, value.into())));
        self
    }

    /// Only rows whose declared column `column` is `NULL`.
    pub fn is_null(mut self, column: impl Into<String>) -> Self {
        self.conditions.push((column.into(), Condition::IsNull));
        self
    }

    /// Only rows whose declared column `column` is not `NULL`.
    pub fn is_not_null(mut self, column: impl Into<String>) -> Self {
        self.conditions.push((column.into(), Condition::IsNotNull));
        self
    }
}

/// A filter's tests, each on the table's declared column, and the values they bind.
type Filter<'t> = (Vec<(&'t Identifier, Test)>, Vec<Value>);

/// A key as a statement returns it, for a table whose keys are of `key_type`.
pub(crate) fn key_from(key_type: KeyType, value: &Value) -> Option<Key> {
    match key_type {
        KeyType::Uuid => value.as_uuid().map(Key::Uuid),
        KeyType::BigInt => value.as_i64().map(Key::BigInt),
        KeyType::Text => value.as_str().map(|s| Key::Text(s.to_owned())),
    }
}

/// How many rows a statement over `n` rows (keys or leases) is written for: the next
/// power of two, at most `max`, so that a store sends few distinct texts, each
/// prepared once per connection. The rows past `n` repeat one of the `n`.
pub(crate) fn padded(n: usize, max: usize) -> usize {
    n.next_power_of_two().min(max).max(n)
}

impl<E: Executor> Store<E> {
    /// Claims up to `limit` free rows among `candidates` for `ttl`, in one statement
    /// (one per [`MAX_KEYS_PER_STATEMENT`] candidate keys; see below for one row of any
    /// key on PostgreSQL): each row claimed has its
    /// generation bumped and a new owner, expiry and the current epoch installed,
    /// exactly as [`try_acquire`](Store::try_acquire) does for one row, and comes back as
    /// an ordinary [`Lease`], in no particular order. The leases of one claim share
    /// their owner, drawn for the claim; each is still its own key and generation.
    ///
    /// A row is free when never leased, released, expired by the database's clock, or
    /// acquired in an earlier epoch. Rows that another transaction holds locked at the
    /// moment (another claim's, an acquisition's) are skipped, not waited for:
    /// `FOR NO KEY UPDATE SKIP LOCKED` on PostgreSQL, `READPAST` on SQL Server; SQLite's single
    /// writer needs neither. Babelfish ignores `READPAST`: there a claim that meets a row
    /// another claim is taking waits for it, finds it no longer free, and returns fewer
    /// rows; no row is ever claimed twice.
    ///
    /// A claim of any rows on PostgreSQL looks through the table from a block drawn at
    /// random, to the table's end and then from its start, so that many claimers do not
    /// all pass the same rows. A claim of one such row draws that block itself, from
    /// the table's size, which one claim of a store (and its clones) reads every 10
    /// seconds in a statement of its own; the part before the block it looks through in
    /// a second statement, sent only when the first found no free row.
    ///
    /// On a connection of the caller's ([`Store::on`]), the claim runs inside whatever
    /// transaction is open there, and its rows stay locked until that transaction ends.
    ///
    /// Fewer than `limit` leases (none included) means that no more free candidates were
    /// found unlocked: it never means an error. A `limit` of 0, or an empty key list,
    /// claims nothing and sends nothing.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidTtl`]; [`Error::KeyType`] for a candidate key of the wrong type;
    /// [`Error::Config`] for a filter on a column the table does not declare, more than
    /// [`MAX_CONDITIONS`] conditions, a comparison with `NULL`, or a store in procedure
    /// mode (there is no claim procedure); any database error. After an error on a
    /// later statement of a long key list, rows claimed by the earlier ones stay claimed
    /// until they expire.
    pub async fn claim(
        &self,
        candidates: &Candidates,
        limit: usize,
        ttl: Duration,
    ) -> Result<Vec<Lease>> {
        let span = crate::trace::heard(|| {
            tracing::debug_span!(
                "fenced",
                step = "claim",
                table = %self.table().name(),
                limit,
                claimed = tracing::field::Empty,
            )
        });
        let claimed = self
            .claim_inner(candidates, limit, ttl)
            .instrument(span.clone())
            .await;
        if let Ok(leases) = &claimed {
            span.record("claimed", leases.len());
        }
        claimed
    }

    async fn claim_inner(
        &self,
        candidates: &Candidates,
        limit: usize,
        ttl: Duration,
    ) -> Result<Vec<Lease>> {
        self.no_procedure("a claim")?;
        let ttl_ms = ttl_millis(ttl)?;
        let (tests, values) = self.conditions(candidates)?;
        if let Some(keys) = &candidates.keys {
            for key in keys {
                self.check_key(key)?;
            }
        }
        if limit == 0 {
            return Ok(Vec::new());
        }
        let owner = Uuid::new_v4();
        let Some(keys) = &candidates.keys else {
            if limit == 1 && self.statements().claim_one.is_some() {
                return self.claim_one(&tests, &values, owner, ttl_ms, ttl).await;
            }
            let params = claim_params(limit, owner, ttl_ms, &values, &[]);
            if tests.is_empty() {
                // Rendered once, with the store's other statements.
                let sql = &self.statements().claim_any;
                return self.run_claim(sql, &params, owner, ttl).await;
            }
            let sql = batch::claim(self.dialect(), self.table(), 0, &tests);
            return self.run_claim(&sql, &params, owner, ttl).await;
        };
        // Once: a key repeated in a later chunk would be claimed again there, superseding
        // the lease an earlier chunk returned (a short ttl has expired by then).
        let mut seen = std::collections::HashSet::with_capacity(keys.len());
        let keys: Vec<Key> = keys.iter().filter(|k| seen.insert(*k)).cloned().collect();
        let mut leases = Vec::new();
        for chunk in keys.chunks(MAX_KEYS_PER_STATEMENT) {
            let left = limit - leases.len();
            let size = padded(chunk.len(), MAX_KEYS_PER_STATEMENT);
            let sql = batch::claim(self.dialect(), self.table(), size, &tests);
            let mut keys: Vec<&Key> = chunk.iter().collect();
            keys.resize(size, &chunk[0]);
            let params = claim_params(left, owner, ttl_ms, &values, &keys);
            leases.extend(self.run_claim(&sql, &params, owner, ttl).await?);
            if leases.len() >= limit {
                break;
            }
        }
        Ok(leases)
    }

    /// A claim of one row of any key, where the dialect has one ([`batch::claim_one`],
    /// PostgreSQL): the statement from a block drawn at random to the table's end,
    /// then, if that part had no free row, the one before that block, each rendered
    /// only when sent (or once with the store's statements, without a filter). Reads
    /// the table's size first when it is due ([`start`]).
    async fn claim_one(
        &self,
        tests: &[(&Identifier, Test)],
        values: &[Value],
        owner: Uuid,
        ttl_ms: i64,
        ttl: Duration,
    ) -> Result<Vec<Lease>> {
        let starts = self.claim_starts();
        if starts.read_due() {
            match self.table_blocks().await {
                Ok(blocks) => starts.read(blocks),
                Err(error) => {
                    starts.read_failed();
                    return Err(error);
                }
            }
        }
        let block = starts.draw();
        let mut params = Vec::with_capacity(3 + values.len());
        params.push(Value::Text(start::position(block)));
        params.push(Value::Uuid(owner));
        params.push(Value::I64(ttl_ms));
        params.extend(values.iter().cloned());
        let leases = self
            .run_claim(
                &self.claim_one_text(ClaimPart::FromStart, tests)?,
                &params,
                owner,
                ttl,
            )
            .await?;
        if !leases.is_empty() || block == 0 {
            return Ok(leases);
        }
        let before = self.claim_one_text(ClaimPart::BeforeStart, tests)?;
        self.run_claim(&before, &params, owner, ttl).await
    }

    /// The text of one part of a claim of one row: the store's own without a filter,
    /// rendered for `tests` otherwise.
    fn claim_one_text(
        &self,
        part: ClaimPart,
        tests: &[(&Identifier, Test)],
    ) -> Result<Cow<'_, str>> {
        if let (true, Some([from, before])) = (tests.is_empty(), &self.statements().claim_one) {
            return Ok(Cow::Borrowed(match part {
                ClaimPart::FromStart => from,
                ClaimPart::BeforeStart => before,
            }));
        }
        dialect::claim_one(self.dialect(), self.table(), part, tests)
            .map(Cow::Owned)
            .ok_or_else(|| Error::Config(format!("{} has no claim of one row", self.dialect())))
    }

    /// The blocks the table's main data takes ([`batch::table_blocks`]).
    async fn table_blocks(&self) -> Result<i64> {
        let name = self.table().name().quoted(self.dialect());
        let rows = self
            .backend()
            .query_rows(batch::table_blocks(), &[Value::Text(name)])
            .await?;
        rows.first()
            .and_then(|row| row.first())
            .and_then(Value::as_i64)
            .ok_or_else(|| {
                Error::UnexpectedResult(format!(
                    "the table's size came back as {rows:?}, expected a number of blocks"
                ))
            })
    }

    /// The filter's tests, each column the table's declared one, and the values bound.
    fn conditions<'t>(&'t self, candidates: &Candidates) -> Result<Filter<'t>> {
        if candidates.conditions.len() > MAX_CONDITIONS {
            return Err(Error::Config(format!(
                "a claim's filter has {} conditions, more than {MAX_CONDITIONS}",
                candidates.conditions.len()
            )));
        }
        let mut tests = Vec::new();
        let mut values = Vec::new();
        for (name, condition) in &candidates.conditions {
            Identifier::new(name)?;
            let column = self
                .table()
                .columns()
                .iter()
                .find(|c| c.name().as_str() == name)
                .ok_or_else(|| {
                    Error::Config(format!(
                        "a claim may filter on the table's declared columns only; {} declares \
                         no column {name}",
                        self.table().name()
                    ))
                })?;
            let test = match condition {
                Condition::Compare(_, Value::Null) => {
                    return Err(Error::Config(format!(
                        "a claim's filter compares {name} with NULL, which matches no row; \
                         use Candidates::is_null"
                    )));
                }
                Condition::Compare(comparison, value) => {
                    values.push(value.clone());
                    Test::Compare(*comparison)
                }
                Condition::IsNull => Test::IsNull,
                Condition::IsNotNull => Test::IsNotNull,
            };
            tests.push((column.name(), test));
        }
        Ok((tests, values))
    }

    async fn run_claim(
        &self,
        sql: &str,
        params: &[Value],
        owner: Uuid,
        ttl: Duration,
    ) -> Result<Vec<Lease>> {
        let acquired_at = Instant::now();
        let rows = self.backend().query_rows(sql, params).await?;
        let key_type = self.table().key_type();
        let mut leases = Vec::with_capacity(rows.len());
        // One row returned has nothing to be compared with.
        let many = rows.len() > 1;
        let mut seen = HashMap::with_capacity(if many { rows.len() } else { 0 });
        for row in rows {
            let (Some(key), Some(generation), Some(epoch)) = (
                row.first().and_then(|v| key_from(key_type, v)),
                row.get(1).and_then(Value::as_i64),
                row.get(2).and_then(Value::as_i64),
            ) else {
                return Err(Error::UnexpectedResult(format!(
                    "a claim returned {row:?}, expected a key, its new generation and epoch"
                )));
            };
            if many && seen.insert(key.clone(), generation).is_some() {
                return Err(Error::UnexpectedResult(format!(
                    "a claim returned the row under {key} twice"
                )));
            }
            leases.push(
                Lease::from_parts(key, owner, generation, ttl, acquired_at).with_epoch(Some(epoch)),
            );
        }
        Ok(leases)
    }
}

/// A claim's parameters: limit, owner, ttl, the filter's values, the keys.
fn claim_params(
    limit: usize,
    owner: Uuid,
    ttl_ms: i64,
    values: &[Value],
    keys: &[&Key],
) -> Vec<Value> {
    let mut params = Vec::with_capacity(3 + values.len() + keys.len());
    params.push(Value::I64(i64::try_from(limit).unwrap_or(i64::MAX)));
    params.push(Value::Uuid(owner));
    params.push(Value::I64(ttl_ms));
    params.extend(values.iter().cloned());
    params.extend(keys.iter().map(|k| Value::from(*k)));
    params
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_are_written_for_powers_of_two_up_to_the_maximum() {
        let sizes: Vec<usize> = [1, 2, 3, 5, 64, 65, 1000, 1024, 1025]
            .iter()
            .map(|&n| padded(n, 1024))
            .collect();
        assert_eq!(sizes, [1, 2, 4, 8, 64, 128, 1024, 1024, 1025]);
        assert_eq!(padded(700, 600), 700, "never fewer rows than given");
        assert_eq!(padded(300, 500), 500);
    }

    #[test]
    fn keys_read_back_by_the_table_key_type() {
        let uuid = Uuid::new_v4();
        assert_eq!(
            key_from(KeyType::Uuid, &Value::Text(uuid.to_string())),
            Some(Key::Uuid(uuid))
        );
        assert_eq!(
            key_from(KeyType::Uuid, &Value::Uuid(uuid)),
            Some(Key::Uuid(uuid))
        );
        assert_eq!(
            key_from(KeyType::BigInt, &Value::I64(7)),
            Some(Key::BigInt(7))
        );
        assert_eq!(
            key_from(KeyType::Text, &Value::from("k")),
            Some(Key::from("k"))
        );
        assert_eq!(key_from(KeyType::BigInt, &Value::from("7")), None);
    }
}
