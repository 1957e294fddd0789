//! PostgreSQL: the guard (its own pool, statements prepared once per connection) against
//! tokio-postgres with the same statements prepared once on each worker's own
//! connection, the way `pgbench -M prepared` runs.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU32, Ordering};

use fenced_guard::{Dialect, FencedTable, Postgres, Store};
use tokio_postgres::{Client, NoTls, SimpleQueryMessage, Statement};
use uuid::Uuid;

use crate::check::{Check, Prepared};
use crate::error::{Error, Result};
use crate::measure::{self, Cycle, Summary, Timing};
use crate::workload::{
    self, CONTENDED_KEY, CycleSql, GuardCycle, PAYLOAD, Rows, Shape, TTL, one_row,
};

/// The application name of the harness's own monitoring connection.
const MONITOR: &str = "fenced-bench-monitor";

/// A PostgreSQL target: its own schema with the fenced table, dropped by
/// [`Pg::teardown`].
pub(crate) struct Pg {
    config: String,
    schema: String,
    table: FencedTable,
    monitor: Client,
    runs: AtomicU32,
}

impl Pg {
    /// Connects, creates the schema `fenced_bench_<pid>` and the table, and provisions
    /// the contended row and one row per worker up to `max_workers`.
    ///
    /// Unless `durable`, the benchmark's sessions (guard and raw alike) run with
    /// `synchronous_commit = off`, so that the figures measure the code path rather
    /// than the disk's flush.
    pub(crate) async fn setup(config: &str, durable: bool, max_workers: usize) -> Result<Pg> {
        let config = if durable {
            config.to_owned()
        } else {
            with_parameter(config, "options", "-c synchronous_commit=off")
        };
        let config = config.as_str();
        let monitor = connect(&with_parameter(config, "application_name", MONITOR)).await?;
        let schema = format!("fenced_bench_{}", std::process::id());
        monitor
            .batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
            ))
            .await?;
        let table = workload::table(&format!("{schema}.BenchLease"))?;
        let store = Store::new(Postgres::connect_with(config, 1).await?, table.clone());
        store.create_schema().await?;
        for key in CONTENDED_KEY..=i64::try_from(max_workers).unwrap_or(i64::MAX - 1) {
            store.provision(key).await?;
        }
        Ok(Pg {
            config: config.to_owned(),
            schema,
            table,
            monitor,
            runs: AtomicU32::new(0),
        })
    }

    /// The server's version, for the report.
    pub(crate) async fn version(&self) -> Result<String> {
        let row = self.monitor.query_one("SHOW server_version", &[]).await?;
        Ok(row.try_get(0)?)
    }

    /// Drops the schema.
    pub(crate) async fn teardown(self) -> Result<()> {
        self.monitor
            .batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema))
            .await?;
        Ok(())
    }

    /// Rewrites the table to its live rows before a run, as `pgbench` vacuums its
    /// tables before each test, so that every run, on either side, starts from the same
    /// table. Each statement of a cycle is an `UPDATE` and leaves a dead row version
    /// behind, and within one benchmark autovacuum did not keep up: over a dozen runs
    /// the nine-row table grew to 13 MB, and the contended row's throughput fell run
    /// after run on both sides (BENCHMARKS.md gives the figures). `VACUUM FULL` takes the
    /// table's exclusive lock; between runs no connection holds a lock on it.
    async fn compact(&self) -> Result<()> {
        self.monitor
            .batch_execute(&format!(
                "VACUUM FULL {}",
                self.table.name().quoted(Dialect::Postgres)
            ))
            .await?;
        Ok(())
    }

    /// A fresh application name for one run's connections.
    fn application_name(&self, side: &str) -> String {
        let n = self.runs.fetch_add(1, Ordering::Relaxed);
        format!("fenced-bench-{side}-{}-{n}", std::process::id())
    }

    async fn backend_pids(&self, application_name: &str) -> Result<HashSet<i32>> {
        let rows = self
            .monitor
            .query(
                "SELECT pid FROM pg_stat_activity WHERE application_name = $1",
                &[&application_name],
            )
            .await?;
        rows.iter()
            .map(|r| r.try_get::<_, i32>(0).map_err(Error::from))
            .collect()
    }

    /// One run through the guard: `workers` workers sharing one guard store whose pool
    /// holds `workers` connections.
    pub(crate) async fn run_guard(
        &self,
        rows: Rows,
        shape: Shape,
        workers: usize,
        timing: Timing,
    ) -> Result<(Summary, Check)> {
        self.compact().await?;
        let name = self.application_name("guard");
        let backend = Postgres::connect_with(
            &with_parameter(&self.config, "application_name", &name),
            workers,
        )
        .await?;
        let store = Store::new(backend, self.table.clone());
        let cycles = GuardCycle::for_workers(&store, shape, workers);
        let window = timing.start();
        let (_, tally, cpu, start, end) = measure::run_async(
            cycles,
            |i| rows.key(i),
            window,
            || self.backend_pids(&name),
            || self.backend_pids(&name),
        )
        .await?;
        // Every connection is idle once the workers are done: take them all, so that
        // each is asked once.
        let backend = store.backend();
        let mut held = Vec::new();
        for _ in 0..backend.idle_connections() {
            held.push(backend.client().await?);
        }
        let mut per_connection = Vec::with_capacity(held.len());
        for client in &held {
            per_connection.push(prepared_statements(client).await?);
        }
        let sql = CycleSql::render(Dialect::Postgres, &self.table, shape)?;
        let check = connection_check(&start?, &end?, &per_connection, &sql);
        Ok((Summary::of(tally, window.measured(), cpu), check))
    }

    /// One run of the same statements through tokio-postgres: each worker owns one
    /// connection and prepares the cycle's statements on it once.
    pub(crate) async fn run_raw(
        &self,
        rows: Rows,
        shape: Shape,
        workers: usize,
        timing: Timing,
    ) -> Result<(Summary, Check)> {
        self.compact().await?;
        let name = self.application_name("raw");
        let config = with_parameter(&self.config, "application_name", &name);
        let sql = CycleSql::render(Dialect::Postgres, &self.table, shape)?;
        let mut cycles = Vec::with_capacity(workers);
        for _ in 0..workers {
            cycles.push(RawCycle::prepare(connect(&config).await?, &sql).await?);
        }
        let window = timing.start();
        let (cycles, tally, cpu, start, end) = measure::run_async(
            cycles,
            |i| rows.key(i),
            window,
            || self.backend_pids(&name),
            || self.backend_pids(&name),
        )
        .await?;
        let mut per_connection = Vec::with_capacity(cycles.len());
        for cycle in &cycles {
            per_connection.push(prepared_statements(&cycle.client).await?);
        }
        let check = connection_check(&start?, &end?, &per_connection, &sql);
        Ok((Summary::of(tally, window.measured(), cpu), check))
    }
}

fn connection_check(
    start: &HashSet<i32>,
    end: &HashSet<i32>,
    per_connection: &[Vec<(String, u64)>],
    sql: &CycleSql,
) -> Check {
    let rendered: Vec<&str> = [
        Some(&sql.acquire),
        Some(&sql.publish),
        sql.release.as_ref(),
        Some(&sql.inspect),
    ]
    .into_iter()
    .flatten()
    .map(String::as_str)
    .collect();
    let counts: Vec<(usize, u64)> = per_connection
        .iter()
        .map(|c| (c.len(), c.iter().map(|s| s.1).sum()))
        .collect();
    Check {
        connections_at_start: start.len(),
        connections_at_end: end.len(),
        opened_during: end.difference(start).count(),
        prepared: Prepared::of(&counts),
        same_sql: Some(
            per_connection
                .iter()
                .flatten()
                .all(|(text, _)| rendered.contains(&text.as_str())),
        ),
    }
}

/// The prepared statements of the connection `client`: their texts and executions,
/// from its own `pg_prepared_statements` (asked with the simple protocol, which
/// prepares nothing).
async fn prepared_statements(client: &Client) -> Result<Vec<(String, u64)>> {
    let messages = client
        .simple_query("SELECT statement, generic_plans + custom_plans FROM pg_prepared_statements")
        .await?;
    let mut statements = Vec::new();
    for message in messages {
        if let SimpleQueryMessage::Row(row) = message {
            let text = row.get(0).map(str::to_owned);
            let executions = row.get(1).and_then(|v| v.parse().ok());
            match (text, executions) {
                (Some(t), Some(e)) => statements.push((t, e)),
                _ => {
                    return Err(Error::Protocol(
                        "pg_prepared_statements returned an unreadable row".into(),
                    ));
                }
            }
        }
    }
    Ok(statements)
}

/// Connects one tokio-postgres client and drives its connection on the runtime.
pub(crate) async fn connect(config: &str) -> Result<Client> {
    let (client, connection) = tokio_postgres::connect(config, NoTls).await?;
    tokio::spawn(async move {
        // A connection error surfaces in the client's next statement.
        let _ = connection.await;
    });
    Ok(client)
}

/// `config` with the parameter `key` set to `value`, for a URL or a key=value string.
pub(crate) fn with_parameter(config: &str, key: &str, value: &str) -> String {
    if config.contains("://") {
        let separator = if config.contains('?') { '&' } else { '?' };
        let value = value
            .replace('%', "%25")
            .replace(' ', "%20")
            .replace('=', "%3D");
        format!("{config}{separator}{key}={value}")
    } else {
        let value = value.replace('\\', "\\\\").replace('\'', "\\'");
        format!("{config} {key}='{value}'")
    }
}

/// The cycle through tokio-postgres, with statements prepared once.
pub(crate) struct RawCycle {
    client: Client,
    acquire: Statement,
    publish: Statement,
    release: Option<Statement>,
}

impl RawCycle {
    pub(crate) async fn prepare(client: Client, sql: &CycleSql) -> Result<Self> {
        let acquire = client.prepare(&sql.acquire).await?;
        let publish = client.prepare(&sql.publish).await?;
        let release = match &sql.release {
            Some(release) => Some(client.prepare(release).await?),
            None => None,
        };
        Ok(RawCycle {
            client,
            acquire,
            publish,
            release,
        })
    }
}

impl Cycle for RawCycle {
    async fn attempt(&mut self, key: i64) -> Result<bool> {
        let owner = Uuid::new_v4();
        let ttl_ms = i64::try_from(TTL.as_millis()).unwrap_or(i64::MAX);
        let rows = self
            .client
            .query(&self.acquire, &[&key, &owner, &ttl_ms])
            .await?;
        let Some(row) = rows.first() else {
            return Ok(false);
        };
        let generation: i64 = row.try_get(0)?;
        let published = self
            .client
            .execute(&self.publish, &[&PAYLOAD, &key, &generation, &owner])
            .await?;
        one_row(published, "publish")?;
        if let Some(release) = &self.release {
            let released = self
                .client
                .execute(release, &[&key, &generation, &owner])
                .await?;
            one_row(released, "release")?;
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_in_both_config_forms() {
        assert_eq!(
            with_parameter("host=h user=u", "application_name", "a"),
            "host=h user=u application_name='a'"
        );
        assert_eq!(
            with_parameter("host=h", "options", "-c it's=off"),
            r"host=h options='-c it\'s=off'"
        );
        assert_eq!(
            with_parameter(
                "postgresql://u@h/db",
                "options",
                "-c synchronous_commit=off"
            ),
            "postgresql://u@h/db?options=-c%20synchronous_commit%3Doff"
        );
        assert_eq!(
            with_parameter(
                "postgresql://u@h/db?sslmode=disable",
                "application_name",
                "a"
            ),
            "postgresql://u@h/db?sslmode=disable&application_name=a"
        );
    }

    #[test]
    fn a_statement_the_harness_did_not_render_is_caught() {
        let sql = CycleSql {
            acquire: "A".into(),
            publish: "P".into(),
            release: Some("R".into()),
            inspect: "I".into(),
        };
        let pids: HashSet<i32> = [1, 2].into();
        let ours = vec![
            vec![("A".to_owned(), 5), ("P".to_owned(), 5)],
            vec![("R".to_owned(), 4)],
        ];
        let check = connection_check(&pids, &pids, &ours, &sql);
        assert_eq!(check.same_sql, Some(true));
        assert_eq!(check.opened_during, 0);
        let prepared = check.prepared.unwrap();
        assert_eq!(
            (prepared.min_per_connection, prepared.max_per_connection),
            (1, 2)
        );

        let foreign = vec![vec![("A".to_owned(), 5), ("SELECT 1".to_owned(), 1)]];
        assert_eq!(
            connection_check(&pids, &pids, &foreign, &sql).same_sql,
            Some(false)
        );
        let reopened: HashSet<i32> = [1, 3].into();
        assert_eq!(
            connection_check(&pids, &reopened, &ours, &sql).opened_during,
            1
        );
    }

    #[test]
    fn parameters_parse_as_tokio_postgres_config() {
        let config: tokio_postgres::Config =
            with_parameter("host=h user=u", "options", "-c synchronous_commit=off")
                .parse()
                .unwrap();
        assert_eq!(config.get_options(), Some("-c synchronous_commit=off"));
        let config: tokio_postgres::Config = with_parameter(
            "postgresql://u@h/db",
            "options",
            "-c synchronous_commit=off",
        )
        .parse()
        .unwrap();
        assert_eq!(config.get_options(), Some("-c synchronous_commit=off"));
    }
}
