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
