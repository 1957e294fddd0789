//! A hand-written repository, the kind the lint reads in CI.

use tokio_postgres::Client;

/// The article's statements, kept as constants.
pub const ACQUIRE: &str = r#"
    UPDATE report_publication
    SET generation = generation + 1, lease_owner = $2,
        lease_until = clock_timestamp() + $3 * interval '1 second'
    WHERE report_id = $1
      AND (lease_until IS NULL OR lease_until <= clock_timestamp())
    RETURNING generation"#;

pub struct Repository {
    client: Client,
}

impl Repository {
    /// Publishes without the fence: "UPDATE report_publication SET payload = $1" in a doc
    /// comment is not checked.
    pub async fn publish(&self, id: uuid::Uuid, payload: &str) -> Result<u64, tokio_postgres::Error> {
        self.client
            .execute("UPDATE report_publication SET payload = $2 WHERE report_id = $1", &[&id, &payload])
            .await
    }

    #[fenced::fenced_write(table = "report_publication")]
    pub async fn publish_fenced(&self, lease: &fenced::Lease, payload: &str) -> Result<u64, tokio_postgres::Error> {
        self.client.execute("UPDATE report_publication SET payload = $1", &[&payload]).await
    }

    pub async fn renew(&self, id: uuid::Uuid, generation: i64, owner: uuid::Uuid, now: std::time::SystemTime) -> Result<u64, tokio_postgres::Error> {
        self.client
            .execute(
                "UPDATE report_publication \
                 SET lease_until = $4 + interval '30 seconds' \
                 WHERE report_id = $1 AND generation = $2 AND lease_owner = $3 AND lease_until > $4",
                &[&id, &generation, &owner, &now],
            )
            .await
    }

    pub async fn forget(&self, id: uuid::Uuid) -> Result<u64, tokio_postgres::Error> {
        // fenced-lint: allow(fenced-row-delete) GDPR erasure; the row never returns
        self.client.execute("DELETE FROM report_publication WHERE report_id = $1", &[&id]).await
    }

    pub async fn reset(&self, id: uuid::Uuid) -> Result<u64, tokio_postgres::Error> {
        let n = sqlx::query!("UPDATE report_publication SET generation = 0 WHERE report_id = $1", id)
            .execute(&self.pool)
            .await?;
        Ok(n)
    }
}
