//! The protocol, written once over a [`Backend`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::backend::Backend;
use crate::dialect::{self, Dialect, FencedSql, Statements};
use crate::error::{Error, Result};
use crate::lease::{AsLease, Lease};
use crate::outcome::Outcome;
use crate::table::{FencedTable, Identifier};
use crate::value::{Key, Value};
use crate::wait::Wait;

/// The longest lease accepted: `i32::MAX` milliseconds (about 24.8 days), the most SQL
/// Server's `DATEADD(millisecond, …)` takes.
pub const MAX_TTL: Duration = Duration::from_millis(i32::MAX as u64);

/// The fencing protocol for one table on one backend.
///
/// Every statement is a single autocommitted statement; the protocol's statements are
/// rendered once, when the store is made, and each shape of caller write (which columns)
/// once, when first used. Every validity check runs in the database,
/// against the database's clock.
///
/// # What a refusal means
///
/// [`Outcome::Refused`] means the statement matched no row. The database does not say
/// why, and neither does the store: several causes are possible for each operation (they
/// are listed on each method). A refusal never means that a driver, network or SQL error
/// happened: those are [`Error`]s. Conversely, an error does not prove that nothing
/// happened: a statement may commit and its acknowledgement be lost. A publication
/// retried after such a loss is refused (this generation already published), so a
/// refusal after an error is ambiguous; read the row (its published generation) to
/// tell.
///
/// After a refusal, the work done under that lease must be discarded: acquiring a new
/// lease and publishing the old result under it would authorise old work under a new
/// ownership generation. Build again under the new lease. Log a refusal as "refused",
/// not as "another worker took over": that is only one of its causes.
#[derive(Clone, Debug)]
pub struct Store<B> {
    backend: B,
    table: FencedTable,
    statements: Statements,
    writes: Arc<Mutex<HashMap<WriteShape, Arc<str>>>>,
}

/// The shape of a caller write: which statement, over which columns.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum WriteShape {
    Update(Vec<Identifier>),
    Publish(Vec<Identifier>),
    PublishAndRelease(Vec<Identifier>),
}

/// How many caller-write shapes a store keeps rendered before starting over.
const MAX_CACHED_WRITES: usize = 256;

impl<B: Backend> Store<B> {
    /// A store for `table` on `backend`.
    pub fn new(backend: B, table: FencedTable) -> Self {
        let statements = Statements::render(backend.dialect(), &table);
        Store {
            backend,
            table,
            statements,
            writes: Arc::default(),
        }
    }

    /// The backend, for example to run raw statements.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The fenced table.
    pub fn table(&self) -> &FencedTable {
        &self.table
    }

    /// The backend's dialect.
    pub fn dialect(&self) -> Dialect {
        self.backend.dialect()
    }

    /// Creates the fenced table if it does not exist (its schema, if any, must exist).
    /// An existing table is left as it is.
    ///
    /// # Errors
    ///
    /// Any database error.
    pub async fn create_schema(&self) -> Result<()> {
        self.backend
            .execute_batch(&self.statements.create_schema)
            .await
    }

    /// Inserts the row for `key` with generation 0 if it does not exist yet. Never
    /// touches an existing row: its generation is never reset. Returns `true` when the
    /// row was created, `false` when it already existed.
    ///
    /// # Errors
    ///
    /// [`Error::KeyType`] for a key of the wrong type; any database error, including a
    /// missing table.
    pub async fn provision(&self, key: impl Into<Key>) -> Result<bool> {
        let key = key.into();
        self.check_key(&key)?;
        let rows = self
            .backend
            .execute(&self.statements.provision, &[key.into()])
            .await?;
        Ok(rows > 0)
    }

    /// One attempt to acquire the row for `key` for `ttl`: bumps the generation and
    /// installs a new random owner, if the row is free (never leased, released, or
    /// expired by the database's clock).
    ///
    /// `None` means the row is held by an unexpired lease, **or the row does not exist**
    /// (it was never [provisioned](Store::provision)). It never means an error.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidTtl`] for a ttl under 1 ms or above [`MAX_TTL`]; [`Error::KeyType`];
    /// any database error, including a missing table.
    pub async fn try_acquire(&self, key: impl Into<Key>, ttl: Duration) -> Result<Option<Lease>> {
        let key = key.into();
        self.check_key(&key)?;
        let ttl_ms = ttl_millis(ttl)?;
        let owner = Uuid::new_v4();
        let acquired_at = Instant::now();
        let generation = self
            .backend
            .query_i64(
                &self.statements.acquire,
                &[Value::from(&key), Value::Uuid(owner), Value::I64(ttl_ms)],
            )
            .await?;
        Ok(generation.map(|g| Lease::from_parts(key, owner, g, ttl, acquired_at)))
    }

    /// Acquires the row for `key`, retrying with jittered exponential backoff until
    /// `wait`'s deadline. `None` when the deadline passed without acquiring (see
    /// [`try_acquire`](Store::try_acquire) for what that can mean).
    ///
    /// # Errors
    ///
    /// [`Error::Cancelled`] as soon as `cancel` is cancelled (checked before each attempt
    /// and during each backoff); every error of [`try_acquire`](Store::try_acquire),
    /// which ends the wait at once.
    pub async fn acquire(
        &self,
        key: impl Into<Key>,
        ttl: Duration,
        wait: &Wait,
        cancel: &CancellationToken,
    ) -> Result<Option<Lease>> {
        let key = key.into();
        let mut attempt = 0u32;
        loop {
            if cancel.is_cancelled() {
                return Err(Error::Cancelled);
            }
            if let Some(lease) = self.try_acquire(key.clone(), ttl).await? {
                return Ok(Some(lease));
            }
            let now = Instant::now();
            if now >= wait.deadline() {
                return Ok(None);
            }
            let pause = wait.sleep_for(attempt, now);
            attempt = attempt.saturating_add(1);
            tokio::select! {
                () = cancel.cancelled() => return Err(Error::Cancelled),
                () = tokio::time::sleep(pause) => {}
            }
        }
    }

    /// Extends the lease to `now + ttl` (the lease's own ttl), only while it still holds:
    /// same generation and owner, and not yet expired by the database's clock. A late
    /// renewal never revives a lease.
    ///
    /// `Refused` means: the lease expired, or it was released, or a successor acquired
    /// the row, or the lease was revoked locally (then nothing was sent). In every case
    /// the caller no longer holds the row and must stop.
    ///
    /// # Errors
    ///
    /// [`Error::KeyType`]; any database error.
    pub async fn renew(&self, lease: &impl AsLease) -> Result<Outcome> {
        let lease = lease.as_lease();
        self.check_key(lease.key())?;
        if lease.is_revoked() {
            return Ok(Outcome::Refused);
        }
        let ttl_ms = ttl_millis(lease.ttl())?;
        let sent_at = Instant::now();
        let mut params = lease_params(lease);
        params.push(Value::I64(ttl_ms));
        let outcome = Outcome::from_rows(
            self.backend
                .execute(&self.statements.renew, &params)
                .await?,
        );
        if outcome.is_applied() {
            lease.extend_local_deadline(sent_at + lease.ttl());
        }
        Ok(outcome)
    }

    /// A fenced update of the caller's own columns (`(column, value)` pairs; names
    /// validated and quoted, values bound), applied only while the lease holds.
    ///
    /// `Refused` means: the lease expired, or it was released, or a successor acquired
    /// the row, or the lease was revoked locally (then nothing was sent). It does not say
    /// which.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for no assignments; [`Error::InvalidIdentifier`] or
    /// [`Error::ProtectedColumn`] for a bad column name; [`Error::KeyType`]; any database
    /// error, including a column that does not exist.
    pub async fn update(
        &self,
        lease: &impl AsLease,
        assignments: &[(&str, Value)],
    ) -> Result<Outcome> {
        let lease = lease.as_lease();
        if assignments.is_empty() {
            return Err(Error::Config("an update needs at least one column".into()));
        }
        let columns = self.caller_columns(assignments)?;
        self.check_key(lease.key())?;
        if lease.is_revoked() {
            return Ok(Outcome::Refused);
        }
        let sql = self.write_sql(WriteShape::Update(columns));
        self.run_fenced(lease, &sql, assignments.iter().map(|(_, v)| v.clone()))
            .await
    }

    /// The article's publication: writes the caller's columns and sets the published
    /// generation to the lease's generation, only while the lease holds and only once per
    /// generation.
    ///
    /// `Refused` means: the lease expired, or it was released, or a successor acquired
    /// the row, or **this generation already published** (which is also what a retry
    /// sees after a publication whose acknowledgement was lost), or the lease was revoked
    /// locally (then nothing was sent). It does not say which: log "publication refused",
    /// not "another worker took over".
    ///
    /// # Errors
    ///
    /// As for [`update`](Store::update), except that no caller columns is allowed.
    pub async fn publish(
        &self,
        lease: &impl AsLease,
        assignments: &[(&str, Value)],
    ) -> Result<Outcome> {
        self.publish_inner(lease.as_lease(), assignments, false)
            .await
    }

    /// [`publish`](Store::publish) and [`release`](Store::release) in one statement: on
    /// success the row is published by this generation and free for the next owner.
    ///
    /// `Refused` means the same as for [`publish`](Store::publish); nothing was written
    /// and the lease was not released (it will expire, or call
    /// [`release`](Store::release)).
    ///
    /// # Errors
    ///
    /// As for [`publish`](Store::publish).
    pub async fn publish_and_release(
        &self,
        lease: &impl AsLease,
        assignments: &[(&str, Value)],
    ) -> Result<Outcome> {
        self.publish_inner(lease.as_lease(), assignments, true)
            .await
    }

    /// Gives the row back: clears owner and expiry where generation and owner still
    /// match. There is no expiry check, so a release after expiry but before any
    /// successor still frees the row. The generation is kept. A revoked lease is still
    /// released.
    ///
    /// `Refused` means: a successor acquired the row (its owner and generation are left
    /// untouched), or this lease was already released, or the row is gone.
    ///
    /// # Errors
    ///
    /// [`Error::KeyType`]; any database error.
    pub async fn release(&self, lease: &impl AsLease) -> Result<Outcome> {
        let lease = lease.as_lease();
        self.check_key(lease.key())?;
        let rows = self
            .backend
            .execute(&self.statements.release, &lease_params(lease))
            .await?;
        Ok(Outcome::from_rows(rows))
    }

    /// Runs the caller's own statement that already carries the fence (see
    /// [`FencedSql`] for the convention): binds `params` as `1..=n` and the lease's key,
    /// generation and owner as `n + 1`, `n + 2`, `n + 3`.
    ///
    /// `Refused` means the statement matched no row: the fence refused it (expired,
    /// released, superseded, or for a publication, already published), or the caller's
    /// own conditions matched nothing, or the lease was revoked locally (then nothing was
    /// sent).
    ///
    /// # Errors
    ///
    /// [`Error::KeyType`]; any database error.
    pub async fn execute_fenced(
        &self,
        lease: &impl AsLease,
        sql: &FencedSql,
        params: &[Value],
    ) -> Result<Outcome> {
        let lease = lease.as_lease();
        self.check_key(lease.key())?;
        if lease.is_revoked() {
            return Ok(Outcome::Refused);
        }
        self.run_fenced(
            lease,
            sql.for_dialect(self.dialect()),
            params.iter().cloned(),
        )
        .await
    }

    async fn publish_inner(
        &self,
        lease: &Lease,
        assignments: &[(&str, Value)],
        release: bool,
    ) -> Result<Outcome> {
        let columns = self.caller_columns(assignments)?;
        self.check_key(lease.key())?;
        if lease.is_revoked() {
            return Ok(Outcome::Refused);
        }
        let sql = self.write_sql(if release {
            WriteShape::PublishAndRelease(columns)
        } else {
            WriteShape::Publish(columns)
        });
        self.run_fenced(lease, &sql, assignments.iter().map(|(_, v)| v.clone()))
            .await
    }

    async fn run_fenced(
        &self,
        lease: &Lease,
        sql: &str,
        caller: impl Iterator<Item = Value>,
    ) -> Result<Outcome> {
        let mut params: Vec<Value> = caller.collect();
        params.extend(lease_params(lease));
        let rows = self.backend.execute(sql, &params).await?;
        let outcome = Outcome::from_rows(rows);
        if outcome.is_refused() {
            tracing::debug!(
                table = %self.table.name(),
                key = %lease.key(),
                generation = lease.generation(),
                "fenced write refused"
            );
        }
        Ok(outcome)
    }

    /// The statement for a caller write, rendered once per shape and then reused.
    fn write_sql(&self, shape: WriteShape) -> Arc<str> {
        let mut writes = self.writes.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(sql) = writes.get(&shape) {
            return Arc::clone(sql);
        }
        let d = self.dialect();
        let sql: Arc<str> = match &shape {
            WriteShape::Update(columns) => {
                dialect::update(d, &self.table, &columns.iter().collect::<Vec<_>>())
            }
            WriteShape::Publish(columns) => {
                dialect::publish(d, &self.table, &columns.iter().collect::<Vec<_>>(), false)
            }
            WriteShape::PublishAndRelease(columns) => {
                dialect::publish(d, &self.table, &columns.iter().collect::<Vec<_>>(), true)
            }
        }
        .into();
        if writes.len() >= MAX_CACHED_WRITES {
            writes.clear();
        }
        writes.insert(shape, Arc::clone(&sql));
        sql
    }

    fn caller_columns(&self, assignments: &[(&str, Value)]) -> Result<Vec<Identifier>> {
        assignments
            .iter()
            .map(|(name, _)| {
                let id = Identifier::new(name)?;
                if self.table.is_protocol_column(name) {
                    return Err(Error::ProtectedColumn {
                        column: (*name).to_owned(),
                    });
                }
                Ok(id)
            })
            .collect()
    }

    fn check_key(&self, key: &Key) -> Result<()> {
        if key.key_type() == self.table.key_type() {
            Ok(())
        } else {
            Err(Error::KeyType {
                expected: self.table.key_type(),
                found: key.key_type(),
            })
        }
    }
}

fn lease_params(lease: &Lease) -> Vec<Value> {
    vec![
        Value::from(lease.key()),
        Value::I64(lease.generation()),
        Value::Uuid(lease.owner()),
    ]
}

fn ttl_millis(ttl: Duration) -> Result<i64> {
    if ttl < Duration::from_millis(1) || ttl > MAX_TTL {
        return Err(Error::InvalidTtl { ttl });
    }
    i64::try_from(ttl.as_millis()).map_err(|_| Error::InvalidTtl { ttl })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_bounds() {
        assert!(matches!(
            ttl_millis(Duration::ZERO),
            Err(Error::InvalidTtl { .. })
        ));
        assert!(matches!(
            ttl_millis(Duration::from_micros(999)),
            Err(Error::InvalidTtl { .. })
        ));
        assert_eq!(ttl_millis(Duration::from_millis(1)).unwrap(), 1);
        assert_eq!(ttl_millis(MAX_TTL).unwrap(), i64::from(i32::MAX));
        assert!(matches!(
            ttl_millis(MAX_TTL + Duration::from_millis(1)),
            Err(Error::InvalidTtl { .. })
        ));
    }
}
