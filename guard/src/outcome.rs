//! The result of a fenced statement that reached the database.

/// What the database did with a fenced statement.
///
/// A refusal is a normal answer, not an error: the fence held. It never says *why* the
/// row did not match (see each [`Store`](crate::Store) method for what a refusal can
/// mean there); driver, network and SQL errors are reported as [`Error`](crate::Error)
/// instead.
#[must_use = "a refused write did not happen; the caller must act on it"]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The statement matched the fenced row and changed it.
    Applied,
    /// The statement matched no row: the fence refused it, or the lease was revoked
    /// locally and nothing was sent.
    Refused,
}

impl Outcome {
    /// `true` for [`Outcome::Applied`].
    pub fn is_applied(self) -> bool {
        self == Outcome::Applied
    }

    /// `true` for [`Outcome::Refused`].
    pub fn is_refused(self) -> bool {
        self == Outcome::Refused
    }

    /// [`Outcome::Applied`] when at least one row was affected, otherwise
    /// [`Outcome::Refused`].
    pub fn from_rows(rows: u64) -> Self {
        if rows == 0 {
            Outcome::Refused
        } else {
            Outcome::Applied
        }
    }
}

/// What a batched renewal ([`Store::renew_many`](crate::Store::renew_many)) did with one
/// lease.
#[must_use = "a lease that was not renewed expires at its old deadline"]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Renewal {
    /// Renewed: its expiry moved to its ttl from the database's now.
    Applied,
    /// Refused, with the causes listed for [`Store::renew`](crate::Store::renew), or
    /// revoked locally and not sent.
    Refused,
    /// Neither renewed nor refused: another transaction holds its row locked, most
    /// likely the lease's own [fenced transaction](crate::transaction), whose lock
    /// fences it while it is open. Skipped so that the other leases of the statement
    /// need not wait for it (PostgreSQL, and SQL Server, whose `READPAST` Babelfish
    /// ignores; SQLite waits); renew it again.
    Locked,
}

impl Renewal {
    /// `true` for [`Renewal::Applied`].
    pub fn is_applied(self) -> bool {
        self == Renewal::Applied
    }
}
