//! Where the comparisons run: a PostgreSQL schema, a SQL Server schema, of their own,
//! dropped at the end.

use std::sync::atomic::{AtomicU32, Ordering};

use fenced_guard::{Dialect, FencedTable, Mssql, MssqlOptions, Postgres, Store};
use tokio::net::TcpStream;
use tokio_postgres::Client;
use tokio_util::compat::{Compat, TokioAsyncWriteCompatExt};

use crate::error::{Error, Result};
use crate::postgres::{connect, with_parameter};
use crate::workload;

/// A schema `fenced_paths_<pid>` on the PostgreSQL server, and a monitoring connection.
pub(crate) struct PgPlace {
    /// The connection string, `synchronous_commit` off unless durable.
    pub(crate) config: String,
    pub(crate) schema: String,
    pub(crate) monitor: Client,
    runs: AtomicU32,
}

impl PgPlace {
    pub(crate) async fn setup(config: &str, durable: bool) -> Result<PgPlace> {
        let config = if durable {
            config.to_owned()
        } else {
            with_parameter(config, "options", "-c synchronous_commit=off")
        };
        let monitor = connect(&with_parameter(&config, "application_name", "fenced-paths")).await?;
        let schema = format!("fenced_paths_{}", std::process::id());
        monitor
            .batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
            ))
            .await?;
        Ok(PgPlace {
            config,
            schema,
            monitor,
            runs: AtomicU32::new(0),
        })
    }

    pub(crate) async fn version(&self) -> Result<String> {
        let row = self.monitor.query_one("SHOW server_version", &[]).await?;
        Ok(format!("PostgreSQL {}", row.try_get::<_, String>(0)?))
    }

    /// A fresh application name for one run's connections, so that the server's CPU
    /// time of exactly those can be read.
    pub(crate) fn name(&self, side: &str) -> String {
        let n = self.runs.fetch_add(1, Ordering::Relaxed);
        format!("fenced-paths-{side}-{}-{n}", std::process::id())
    }

    /// The connection string of connections named `name`.
    pub(crate) fn named(&self, name: &str) -> String {
        with_parameter(&self.config, "application_name", name)
    }

    /// The benchmark's fenced table `name` in the schema, with rows `1..=rows`.
    pub(crate) async fn table(&self, name: &str, rows: i64) -> Result<FencedTable> {
        let table = workload::table(&format!("{}.{name}", self.schema))?;
        let store = Store::new(
            Postgres::connect_with(&self.config, 1).await?,
            table.clone(),
        );
        store.create_schema().await?;
        let d = Dialect::Postgres;
        self.monitor
            .execute(
                &format!(
                    "INSERT INTO {} ({}) SELECT g FROM generate_series(1::bigint, $1) AS g",
                    table.name().quoted(d),
                    table.key_column().quoted(d),
                ),
                &[&rows],
            )
            .await?;
        self.vacuum(&table.name().quoted(d), false).await?;
        Ok(table)
    }

    /// `VACUUM` (`FULL`: rewritten to its live rows) and `ANALYZE` of `quoted`, before a
    /// run, so that every run, on either side, starts from the same table.
    pub(crate) async fn vacuum(&self, quoted: &str, full: bool) -> Result<()> {
        let full = if full { "FULL, " } else { "" };
        self.monitor
            .batch_execute(&format!("VACUUM ({full}ANALYZE) {quoted}"))
            .await?;
        Ok(())
    }

    /// Makes the table of a transaction's lines, `name` (as written in SQL) in the
    /// place's schema; returns its qualified name.
    pub(crate) async fn lines(&self, name: &str) -> Result<String> {
        let lines = format!("{}.{name}", self.schema);
        self.monitor
            .batch_execute(&format!(
                "CREATE TABLE {lines} (\"Report\" bigint NOT NULL, \"Line\" text NOT NULL)"
            ))
            .await?;
        Ok(lines)
    }

    /// Clears what a transaction's run left before the next: the leases' dead row
    /// versions in `table` (quoted), and every line in `lines`.
    pub(crate) async fn reset(&self, table: &str, lines: &str) -> Result<()> {
        self.vacuum(table, true).await?;
        self.monitor
            .batch_execute(&format!("TRUNCATE {lines}"))
            .await?;
        Ok(())
    }

    pub(crate) async fn teardown(&self) -> Result<()> {
        self.monitor
            .batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema))
            .await?;
        Ok(())
    }
}

/// A tiberius client as a service holds one.
pub(crate) type TdsClient = tiberius::Client<Compat<TcpStream>>;

/// A schema `fenced_paths_<pid>` on the SQL Server, and an administrative pool.
pub(crate) struct MssqlPlace {
    pub(crate) url: String,
    pub(crate) schema: String,
    pub(crate) admin: Mssql,
    tables: std::sync::Mutex<Vec<String>>,
}

impl MssqlPlace {
    pub(crate) async fn setup(url: &str) -> Result<MssqlPlace> {
        let admin =
            Mssql::connect_with_options(url, MssqlOptions::default().max_connections(1)).await?;
        let schema = format!("fenced_paths_{}", std::process::id());
        use fenced_guard::Executor as _;
        admin
            .execute_batch(&format!("CREATE SCHEMA [{schema}]"))
            .await?;
        Ok(MssqlPlace {
            url: url.to_owned(),
            schema,
            admin,
            tables: std::sync::Mutex::default(),
        })
    }

    pub(crate) async fn version(&self) -> Result<String> {
        use fenced_guard::Executor as _;
        let row = self
            .admin
            .query_row("SELECT CAST(@@VERSION AS nvarchar(400))", &[])
            .await?;
        let version = row
            .and_then(|row| row.into_iter().next())
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        Ok(version
            .lines()
            .next()
            .unwrap_or("SQL Server")
            .trim()
            .to_owned())
    }

    /// A pool of `connections`, all opened now (a TDS login to Babelfish starts a
    /// server process: opened lazily, it would land in the measured window).
    pub(crate) async fn pool(&self, connections: usize) -> Result<Mssql> {
        Ok(Mssql::connect_with_options(
            &self.url,
            MssqlOptions::default()
                .max_connections(connections)
                .open_at_connect(connections),
        )
        .await?)
    }

    /// A client of the service's own.
    pub(crate) async fn client(&self) -> Result<TdsClient> {
        let config = tiberius::Config::from_ado_string(&self.url)?;
        let tcp = TcpStream::connect(config.get_addr())
            .await
            .map_err(|source| Error::Io {
                path: config.get_addr().to_string(),
                source,
            })?;
        let _ = tcp.set_nodelay(true);
        Ok(Box::pin(tiberius::Client::connect(config, tcp.compat_write())).await?)
    }

    /// The benchmark's fenced table `name` in the schema, with rows `1..=rows`.
    pub(crate) async fn table(&self, name: &str, rows: i64) -> Result<FencedTable> {
        let table = workload::table(&format!("{}.{name}", self.schema))?;
        let store = Store::new(self.pool(1).await?, table.clone());
        store.create_schema().await?;
        for key in 1..=rows {
            store.provision(key).await?;
        }
        self.created(&table.name().quoted(Dialect::Mssql));
        self.created(&table.epoch_table().quoted(Dialect::Mssql));
        self.created(&table.operations_table().quoted(Dialect::Mssql));
        Ok(table)
    }

    /// Remembers a table to drop at the end.
    pub(crate) fn created(&self, quoted: &str) {
        self.tables
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(quoted.to_owned());
    }

    /// Drops the tables made, then the schema: SQL Server has no `DROP SCHEMA ...
    /// CASCADE`.
    pub(crate) async fn teardown(&self) -> Result<()> {
        use fenced_guard::Executor as _;
        let tables = std::mem::take(
            &mut *self
                .tables
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        for table in tables.iter().rev() {
            self.admin
                .execute_batch(&format!("DROP TABLE IF EXISTS {table}"))
                .await?;
        }
        self.admin
            .execute_batch(&format!("DROP SCHEMA [{}]", self.schema))
            .await?;
        Ok(())
    }
}
