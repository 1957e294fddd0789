//! SQL Server for the tests: the server at `FENCED_MSSQL_URL`, an ADO.NET connection
//! string (a real SQL Server, or the TDS server `.ci/run` builds). Without it a test
//! says that it did not run and returns, unless `CI` is set: then it fails, so that a
//! CI run without its server can never pass by skipping. Each test gets a schema with a
//! random name; the teardown drops everything in it, then the schema.

use std::io::Write;

use fenced_guard::{Executor, Mssql, MssqlOptions, Value};
use uuid::Uuid;

use super::Place;

/// The server's connection string, or `None` (said once on stderr) when the SQL Server
/// tests do not run here. Panics when `CI` is set and the string is not.
pub fn url() -> Option<String> {
    if let Ok(url) = std::env::var("FENCED_MSSQL_URL") {
        return Some(url);
    }
    if std::env::var_os("CI").is_some() {
        panic!(
            "CI is set but FENCED_MSSQL_URL is not: the SQL Server tests must run in CI. \
             Start the TDS server (`.ci/run` does) and export the connection string it prints."
        );
    }
    // Written past the test harness's capture, once, so that it shows in every run.
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| {
        let _ = writeln!(
            std::io::stderr(),
            "SQL Server tests did not run: FENCED_MSSQL_URL is not set"
        );
    });
    None
}

/// Connects with at most `connections` connections and `options`' session setup;
/// panics with the driver's answer when the server cannot be reached.
pub async fn connect(url: &str, options: MssqlOptions) -> Mssql {
    Mssql::connect_with_options(url, options)
        .await
        .unwrap_or_else(|error| {
            panic!(
                "SQL Server is not reachable with FENCED_MSSQL_URL: {error} ({:?})",
                std::error::Error::source(&error)
            )
        })
}

/// A session batch for [`MssqlOptions::on_connect`] that runs the protocol's statement
/// shapes once on a table variable. Babelfish parses T-SQL with a parser whose caches
/// are per server process, that is per connection: cold, the first acquisition on a
/// connection took 1.1 to 1.8 s on a loaded 2-core machine, 0.16 to 0.24 s after this
/// batch. The keeper's tests, whose ttls are 1.5 s, warm their connections with it;
/// real SQL Server shares its plan cache and needs nothing of the kind.
pub const WARM_UP: &str = "DECLARE @w TABLE ([K] uniqueidentifier PRIMARY KEY, [G] bigint NOT NULL, [O] uniqueidentifier NULL, [U] datetime2(7) NULL, [E] bigint NOT NULL, [P] nvarchar(max) NULL); \
DECLARE @k uniqueidentifier = NEWID(), @fenced_rows int, @fenced_generation bigint, @fenced_epoch bigint; \
INSERT INTO @w ([K], [G], [E]) SELECT @k, 0, 0 WHERE NOT EXISTS (SELECT 1 FROM @w WHERE [K] = @k); \
DECLARE @fenced_outer int = @@TRANCOUNT; BEGIN TRY IF @fenced_outer = 0 BEGIN TRANSACTION ELSE SAVE TRANSACTION fenced_step; UPDATE @w SET [G] = [G] + 1, [O] = @k, [U] = DATEADD(millisecond, CAST(1000 AS int), SYSUTCDATETIME()), [E] = (SELECT MAX([E]) FROM @w) WHERE [K] = @k AND ([U] IS NULL OR [U] <= SYSUTCDATETIME() OR [E] <> (SELECT MAX([E]) FROM @w)); SET @fenced_rows = @@ROWCOUNT; IF @fenced_rows > 0 SELECT @fenced_generation = [G], @fenced_epoch = [E] FROM @w WHERE [K] = @k; IF @fenced_outer = 0 COMMIT TRANSACTION; END TRY BEGIN CATCH IF @fenced_outer = 0 BEGIN IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION; THROW; END; IF XACT_STATE() = 1 ROLLBACK TRANSACTION fenced_step; DECLARE @fenced_error int = 1000000 + ERROR_NUMBER(), @fenced_message nvarchar(2048) = ERROR_MESSAGE(); THROW @fenced_error, @fenced_message, 1; END CATCH; \
UPDATE @w SET [U] = DATEADD(millisecond, CAST(1000 AS int), SYSUTCDATETIME()) WHERE [K] = @k AND [G] = 1 AND [O] = @k AND [U] > SYSUTCDATETIME() AND [E] = (SELECT MAX([E]) FROM @w); \
UPDATE @w SET [P] = N'w', [O] = NULL, [U] = NULL WHERE [K] = @k AND [G] = 1 AND [O] = @k; \
SELECT CAST(@@ROWCOUNT AS bigint), @fenced_generation, @fenced_epoch";

/// Whether the server is Babelfish (a TDS endpoint on PostgreSQL) rather than SQL
/// Server: the tests that meet one of its documented departures name it by this.
pub async fn is_babelfish(backend: &Mssql) -> bool {
    let row = backend
        .query_row(
            "SELECT CAST(CASE WHEN @@VERSION LIKE '%Babelfish%' THEN 1 ELSE 0 END AS bigint)",
            &[],
        )
        .await
        .expect("read @@VERSION");
    row == Some(vec![Value::I64(1)])
}

/// A schema of its own on the server, and the administrative connection that made it.
pub struct TestSchema {
    url: String,
    admin: Mssql,
    name: String,
    connections: usize,
    options: MssqlOptions,
}

impl TestSchema {
    /// Creates a schema named `prefix` followed by a random suffix; each backend
    /// [`Place::connect`] makes has at most `connections` connections. `None` when the
    /// SQL Server tests do not run here (see [`url`]).
    pub async fn create(prefix: &str, connections: usize) -> Option<TestSchema> {
        Self::create_with(prefix, connections, MssqlOptions::default()).await
    }

    /// As [`create`](TestSchema::create), each backend opened with `options` (its
    /// `max_connections` replaced by `connections`).
    pub async fn create_with(
        prefix: &str,
        connections: usize,
        options: MssqlOptions,
    ) -> Option<TestSchema> {
        let url = url()?;
        let admin = connect(&url, MssqlOptions::default().max_connections(2)).await;
        let name = format!("{prefix}{}", Uuid::new_v4().simple());
        admin
            .execute_batch(&format!("CREATE SCHEMA [{name}]"))
            .await
            .expect("create the test schema");
        Some(TestSchema {
            url,
            admin,
            name,
            connections,
            options: options.max_connections(connections),
        })
    }

    /// The administrative connection (outside any test's pool).
    pub fn admin(&self) -> &Mssql {
        &self.admin
    }

    /// The connection string.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The schema's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Place for TestSchema {
    type Backend = Mssql;

    /// A backend with every connection of its pool already open. A TDS login to
    /// Babelfish starts a server process and took up to a second on a loaded 2-core
    /// machine: opened lazily, inside a keeper's renewal, it ate the tests' short ttls.
    /// Opened here, the tests time statements, not logins.
    async fn connect(&self) -> Mssql {
        connect(
            &self.url,
            self.options.clone().open_at_connect(self.connections),
        )
        .await
    }

    /// `table` inside this schema.
    fn qualified(&self, table: &str) -> String {
        format!("{}.{table}", self.name)
    }

    /// Drops the schema's procedures and tables (their triggers with them), then the
    /// schema: SQL Server has no `DROP SCHEMA ... CASCADE`. A schema already dropped is
    /// left alone.
    async fn teardown(&self) {
        let exists = self
            .admin
            .query_i64(
                "SELECT CAST(CASE WHEN SCHEMA_ID(@P1) IS NULL THEN 0 ELSE 1 END AS bigint)",
                &[Value::from(self.name.as_str())],
            )
            .await
            .expect("look the test schema up");
        if exists != Some(1) {
            return;
        }
        let next = "SELECT TOP (1) o.name, CAST(CASE WHEN o.type = 'P' THEN 0 ELSE 1 END AS bigint) \
                    FROM sys.objects AS o WHERE o.schema_id = SCHEMA_ID(@P1) \
                    AND o.type IN ('P', 'U') ORDER BY 2";
        let schema = Value::from(self.name.as_str());
        // Bounded: each round drops one object, and a schema of a test holds a few dozen.
        for _ in 0..1_000 {
            let row = self
                .admin
                .query_row(next, std::slice::from_ref(&schema))
                .await
                .expect("list the test schema's objects");
            let Some(row) = row else {
                self.admin
                    .execute_batch(&format!("DROP SCHEMA [{}]", self.name))
                    .await
                    .expect("drop the test schema");
                return;
            };
            let (Some(object), Some(kind)) = (row[0].as_str(), row[1].as_i64()) else {
                panic!("unexpected row listing the test schema: {row:?}");
            };
            let what = if kind == 0 { "PROCEDURE" } else { "TABLE" };
            self.admin
                .execute_batch(&format!("DROP {what} [{}].[{object}]", self.name))
                .await
                .expect("drop a test object");
        }
        panic!("the test schema {} did not empty", self.name);
    }
}
