//! PostgreSQL for the tests: the server at `FENCED_PG_URL` (default
//! `host=127.0.0.1 port=5432 user=postgres dbname=test`), which must be reachable: the
//! tests fail, never skip, otherwise. Each test gets a schema with a random name,
//! dropped at the end.

use fenced_guard::{Executor, Postgres};
use uuid::Uuid;

use super::Place;

const DEFAULT_URL: &str = "host=127.0.0.1 port=5432 user=postgres dbname=test";

/// The server's connection string: `FENCED_PG_URL`, or the local default.
pub fn url() -> String {
    std::env::var("FENCED_PG_URL").unwrap_or_else(|_| DEFAULT_URL.to_owned())
}

/// A schema of its own on the server, and the administrative connection that made it.
pub struct TestSchema {
    admin: Postgres,
    name: String,
    connections: usize,
}

impl TestSchema {
    /// Connects and creates a schema named `prefix` followed by a random suffix; each
    /// backend [`Place::connect`] makes has at most `connections` connections. Panics
    /// with instructions when the server is not reachable.
    pub async fn create(prefix: &str, connections: usize) -> TestSchema {
        let url = url();
        let admin = match Postgres::connect_with(&url, 2).await {
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
        TestSchema {
            admin,
            name,
            connections,
        }
    }

    /// The administrative connection (outside any test's pool).
    pub fn admin(&self) -> &Postgres {
        &self.admin
    }
}

impl Place for TestSchema {
    type Backend = Postgres;

    async fn connect(&self) -> Postgres {
        Postgres::connect_with(&url(), self.connections)
            .await
            .expect("connect to postgresql")
    }

    /// `table` inside this schema.
    fn qualified(&self, table: &str) -> String {
        format!("{}.{table}", self.name)
    }

    /// Drops the schema and everything in it.
    async fn teardown(&self) {
        self.admin
            .execute_batch(&format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.name))
            .await
            .expect("drop the test schema");
    }
}
