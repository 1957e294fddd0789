//! The statements a pooled connection has prepared, kept with it.
//!
//! They live with the connection that prepared them, so finding one is a comparison of
//! texts on a connection the caller holds alone: no lock, no hash of the text. A store
//! issues a handful of distinct statements, each many times. PostgreSQL keeps its
//! server-side statements here (the guard's pool's, and those an executor on a caller's
//! client prepared), SQLite its rusqlite statements.

/// The statements prepared on one connection, found by their text, at most `capacity`
/// of them: past that, the one run longest ago is dropped, so that a stream of distinct
/// texts sent through the backend does not push out the statements the store runs all
/// the time.
pub(crate) struct KeptStatements<S> {
    entries: Vec<Kept<S>>,
    capacity: usize,
    /// Counts the statements run, to tell which kept statement ran longest ago.
    runs: u64,
}

/// One kept statement.
struct Kept<S> {
    text: Box<str>,
    statement: S,
    /// The run count when the statement last ran.
    last_run: u64,
}

impl<S> KeptStatements<S> {
    /// Keeps at most `capacity` statements (at least one).
    pub(crate) fn new(capacity: usize) -> Self {
        KeptStatements {
            entries: Vec::new(),
            capacity: capacity.max(1),
            runs: 0,
        }
    }

    /// Where the statement for `sql` is kept, counted as run now; `None` if none is.
    ///
    /// Comparing `str`s compares their lengths first, so statements of other lengths
    /// cost one comparison each.
    pub(crate) fn find(&mut self, sql: &str) -> Option<usize> {
        let index = self.entries.iter().position(|kept| *kept.text == *sql)?;
        self.runs += 1;
        self.entries[index].last_run = self.runs;
        Some(index)
    }

    /// Keeps `statement`, prepared from `sql`, counted as run now, and says where;
    /// first drops the statement run longest ago if `capacity` are kept.
    pub(crate) fn keep(&mut self, sql: &str, statement: S) -> usize {
        if self.entries.len() >= self.capacity {
            let oldest = (0..self.entries.len())
                .min_by_key(|&i| self.entries[i].last_run)
                .unwrap_or(0);
            self.entries.swap_remove(oldest);
        }
        self.runs += 1;
        self.entries.push(Kept {
            text: sql.into(),
            statement,
            last_run: self.runs,
        });
        self.entries.len() - 1
    }

    /// The statement kept at `index`, as [`find`](Self::find) or [`keep`](Self::keep)
    /// gave it.
    pub(crate) fn get_mut(&mut self, index: usize) -> &mut S {
        &mut self.entries[index].statement
    }

    /// Drops the statement for `sql`, if one is kept.
    #[cfg(feature = "postgres")]
    pub(crate) fn forget(&mut self, sql: &str) {
        self.entries.retain(|kept| *kept.text != *sql);
    }

    /// How many statements are kept.
    #[cfg(any(test, feature = "postgres"))]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether a statement for `sql` is kept, without counting it as run.
    #[cfg(test)]
    pub(crate) fn contains(&self, sql: &str) -> bool {
        self.entries.iter().any(|kept| *kept.text == *sql)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keeps `sql` with `value` unless it is kept, and gives the value kept for it.
    fn use_(kept: &mut KeptStatements<u32>, sql: &str, value: u32) -> u32 {
        let index = match kept.find(sql) {
            Some(index) => index,
            None => kept.keep(sql, value),
        };
        *kept.get_mut(index)
    }

    /// A text finds the statement kept for it, and only that one: a match on length
    /// alone would give the other here.
    #[test]
    fn a_text_finds_its_own_statement() {
        let mut kept = KeptStatements::new(4);
        assert_eq!(use_(&mut kept, "SELECT 2", 2), 2);
        assert_eq!(use_(&mut kept, "SELECT 3", 3), 3);
        assert_eq!(use_(&mut kept, "SELECT 2", 20), 2, "kept, not kept again");
        assert_eq!(use_(&mut kept, "SELECT 3", 30), 3);
        assert_eq!(kept.len(), 2);
    }

    /// Past its capacity the statement run longest ago goes, even if it was kept
    /// after one that ran since.
    #[test]
    fn the_statement_run_longest_ago_makes_room() {
        let mut kept = KeptStatements::new(3);
        for (sql, value) in [("a", 1), ("b", 2), ("c", 3)] {
            use_(&mut kept, sql, value);
        }
        use_(&mut kept, "a", 0); // now "b" ran longest ago
        use_(&mut kept, "d", 4);
        assert_eq!(kept.len(), 3);
        assert!(!kept.contains("b"));
        for sql in ["a", "c", "d"] {
            assert!(kept.contains(sql), "{sql}");
        }
        assert_eq!(use_(&mut kept, "a", 0), 1, "still the statement kept first");
    }

    /// A statement forgotten is prepared again on its next use.
    #[cfg(feature = "postgres")]
    #[test]
    fn a_forgotten_statement_is_kept_again() {
        let mut kept = KeptStatements::new(4);
        use_(&mut kept, "SELECT 1", 1);
        kept.forget("SELECT 1");
        assert_eq!(kept.len(), 0);
        assert_eq!(use_(&mut kept, "SELECT 1", 10), 10);
    }
}
