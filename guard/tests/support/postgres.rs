//! PostgreSQL for the tests: the server at `FENCED_PG_URL` (default
//! `host=127.0.0.1 port=5432 user=postgres dbname=test`), which must be reachable: the
//! tests fail, never skip, otherwise. Each test gets a schema with a random name,
//! dropped at the end.

use fenced_guard::{Backend, Postgres};
use uuid::Uuid;

const DEFAULT_URL: &str = "host=127.0.0.1 port=5432 user=postgres dbname=test";

/// The server's connection string: `FENCED_PG_URL`, or the local default.
pub fn url() -> String {
    std::env::var("FENCED_PG_URL").unwrap_or_else(|_| DEFAULT_URL.to_owned())
}

/// A new backend on the server with at most `max_connections` connections.
pub async fn connect(max_connections: usize) -> Postgres {
    Postgres::connect_with(&url(), max_connections)
        .await
        .expect("connect to postgresql")
}

/// A schema of its own on the server, and the administrative connection that made it.
pub struct TestSchema {
    admin: Postgres,
    name: String,
}

impl TestSchema {
    /// Connects with at most `max_connections` and creates a schema named `prefix`
    /// followed by a random suffix. Panics with instructions when the server is not
    /// reachable.
    pub async fn create(prefix: &str, max_connections: usize) -> TestSchema {
        let url = url();
        let admin = match Postgres::connect_with(&url, max_connections).await {
            Ok(admin) => admin,
            Err(error) => panic!(
                "PostgreSQL is not reachable at `{url}` ({error}: {:?}). Start it with \
                 `pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start`, \
                 or point FENCED_PG_URL at a server (user with CREATE on the database).",
                std::error::Error::source(&error)
            ),
        };
        let name = format!("{prefix}{}", Uuid::new_v4().simple());
        admin
            .execute_batch(&format!("CREATE SCHEMA \"{name}\""))
            .await
            .expect("create the test schema");
        TestSchema { admin, name }
    }

    /// The administrative connection (outside any test's pool).
    pub fn admin(&self) -> &Postgres {
        &self.admin
    }

    /// `table` inside this schema.
    pub fn qualified(&self, table: &str) -> String {
        format!("{}.{table}", self.name)
    }

    /// Drops the schema and everything in it.
    pub async fn drop_schema(&self) {
        self.admin
            .execute_batch(&format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.name))
            .await
            .expect("drop the test schema");
    }
}
