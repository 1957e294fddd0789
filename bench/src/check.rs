//! What each run verifies besides its timing: that connections are opened once, not
//! per operation, and (on PostgreSQL) that statements are prepared once per connection.

/// The connections and statements seen during one run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Check {
    /// Connections open when the measured window started (after the warm-up).
    pub(crate) connections_at_start: usize,
    /// Connections open when it ended.
    pub(crate) connections_at_end: usize,
    /// Connections open at the end that were not open at the start (PostgreSQL: backend
    /// pids; SQLite: growth of the count of open handles on the database file).
    pub(crate) opened_during: usize,
    /// The prepared statements of the run's connections (PostgreSQL only: SQLite's
    /// statement cache is not observable from outside the connection).
    pub(crate) prepared: Option<Prepared>,
    /// Whether every prepared statement's text is one of the statements the harness
    /// rendered with `fenced_guard::dialect` for this cycle: the guard and the raw driver
    /// ran the same SQL (PostgreSQL only).
    pub(crate) same_sql: Option<bool>,
}

/// The prepared statements of one run's connections, from each connection's own
/// `pg_prepared_statements`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Prepared {
    /// Fewest prepared statements on one connection.
    pub(crate) min_per_connection: usize,
    /// Most prepared statements on one connection.
    pub(crate) max_per_connection: usize,
    /// Executions per prepared statement, all connections together.
    pub(crate) executions_per_statement: f64,
}

impl Prepared {
    /// The summary of per-connection `(statements, executions)` pairs; `None` when there
    /// are no connections.
    pub(crate) fn of(per_connection: &[(usize, u64)]) -> Option<Prepared> {
        let min = per_connection.iter().map(|c| c.0).min()?;
        let max = per_connection.iter().map(|c| c.0).max()?;
        let statements: usize = per_connection.iter().map(|c| c.0).sum();
        let executions: u64 = per_connection.iter().map(|c| c.1).sum();
        Some(Prepared {
            min_per_connection: min,
            max_per_connection: max,
            executions_per_statement: if statements == 0 {
                0.0
            } else {
                executions as f64 / statements as f64
            },
        })
    }
}

impl Check {
    /// Combines the checks of several runs of the same kind, keeping the worst of each
    /// figure: the most connections, the most opened during a window, the widest range
    /// of prepared statements, the fewest executions per statement.
    pub(crate) fn worst(checks: &[Check]) -> Option<Check> {
        let first = *checks.first()?;
        Some(checks.iter().skip(1).fold(first, |acc, c| Check {
            connections_at_start: acc.connections_at_start.max(c.connections_at_start),
            connections_at_end: acc.connections_at_end.max(c.connections_at_end),
            opened_during: acc.opened_during.max(c.opened_during),
            prepared: match (acc.prepared, c.prepared) {
                (Some(a), Some(b)) => Some(Prepared {
                    min_per_connection: a.min_per_connection.min(b.min_per_connection),
                    max_per_connection: a.max_per_connection.max(b.max_per_connection),
                    executions_per_statement:
                        a.executions_per_statement.min(b.executions_per_statement),
                }),
                (a, b) => a.or(b),
            },
            same_sql: match (acc.same_sql, c.same_sql) {
                (Some(a), Some(b)) => Some(a && b),
                (a, b) => a.or(b),
            },
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepared_summary() {
        let p = Prepared::of(&[(3, 300), (3, 600)]).unwrap();
        assert_eq!((p.min_per_connection, p.max_per_connection), (3, 3));
        assert_eq!(p.executions_per_statement, 150.0);
        assert!(Prepared::of(&[]).is_none());
    }

    #[test]
    fn worst_keeps_a_connection_opened_in_any_run() {
        let clean = Check {
            connections_at_start: 8,
            connections_at_end: 8,
            ..Check::default()
        };
        let churn = Check {
            opened_during: 5,
            ..clean
        };
        assert_eq!(
            Check::worst(&[clean, churn, clean]).unwrap().opened_during,
            5
        );
        assert_eq!(Check::worst(&[clean, clean]).unwrap().opened_during, 0);
        assert!(Check::worst(&[]).is_none());
    }
}
