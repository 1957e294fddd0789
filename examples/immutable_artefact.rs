//! What the fence cannot protect, and the pattern that brings it back under the fence.
//!
//! The fence protects the row that holds the generation. A worker that writes somewhere
//! else — a blob, a file, an object store — writes there whether or not its lease is
//! still good: if stale worker A overwrote a shared `report.html`, the damage is done
//! before the database ever refuses A's publication.
//!
//! The cure: never overwrite. Each worker uploads its output as an **immutable artefact
//! under a key of its own** (here a file named by a fresh UUID, created with
//! `create_new`, so it can never replace another), then **publishes the artefact's key
//! through a fenced write**. Readers follow only the published pointer. A stale worker's
//! upload lands, but its pointer is refused, so nobody ever reads it; unreferenced
//! artefacts are garbage for a cleanup job.
//!
//! ```text
//! cargo run --example immutable_artefact --features sqlite
//! ```

use std::fs::{self, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use fenced::{Backend, ColumnType, FencedTable, Lease, Outcome, Sqlite, Store, Value, Wait};
use uuid::Uuid;

const LEASE_TTL: Duration = Duration::from_millis(300);

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let blobs = Blobs::new(dir.path().join("artefacts"))?;
    let table = FencedTable::builder()
        .table("ReportPublication")
        .column("ArtefactKey", ColumnType::Text)
        .build()?;
    let store = Store::new(Sqlite::open(dir.path().join("reports.db")).await?, table);
    store.create_schema().await?;
    let report = Uuid::new_v4();
    store.provision(report).await?;

    // A acquires, builds, uploads its artefact... and pauses before publishing.
    let a = store
        .try_acquire(report, LEASE_TTL)
        .await?
        .context("free row")?;
    let a_artefact = blobs.put(&format!(
        "report built by A (generation {})",
        a.generation()
    ))?;
    println!(
        "A (generation {}) uploaded artefact {a_artefact}, then paused",
        a.generation()
    );

    // A's lease expires by the database's clock; B waits for it and takes over.
    let b = store
        .acquire(
            report,
            LEASE_TTL,
            &Wait::timeout(Duration::from_secs(10)),
            &Default::default(),
        )
        .await?
        .context("A's lease should expire within 10 s")?;
    let b_artefact = blobs.put(&format!(
        "report built by B (generation {})",
        b.generation()
    ))?;
    let b_outcome = publish_pointer(&store, &b, &b_artefact).await?;
    println!(
        "B (generation {}) uploaded artefact {b_artefact}, published its key: {b_outcome:?}",
        b.generation()
    );

    // A resumes. Its upload already happened — harmless, since it replaced nothing.
    // Its pointer is what readers follow, and the fence refuses it.
    let a_outcome = publish_pointer(&store, &a, &a_artefact).await?;
    println!("A resumed and published its key: {a_outcome:?}");

    // A reader follows the published pointer only.
    let published = read_pointer(&store, report).await?.context("B published")?;
    println!(
        "\nreader follows the pointer to {published}: {:?}",
        blobs.get(&published)?
    );

    let garbage: Vec<String> = blobs
        .keys()?
        .into_iter()
        .filter(|key| *key != published)
        .collect();
    println!("unreferenced artefacts, for a cleanup job: {garbage:?}");

    anyhow::ensure!(
        a_outcome == Outcome::Refused,
        "the stale pointer must be refused"
    );
    anyhow::ensure!(published == b_artefact, "readers must see B's artefact");
    Ok(())
}

async fn publish_pointer<B: Backend>(
    store: &Store<B>,
    lease: &Lease,
    key: &str,
) -> anyhow::Result<Outcome> {
    Ok(store
        .publish_and_release(lease, &[("ArtefactKey", Value::from(key))])
        .await?)
}

async fn read_pointer<B: Backend>(
    store: &Store<B>,
    report: Uuid,
) -> anyhow::Result<Option<String>> {
    let dialect = store.dialect();
    let table = store.table();
    let sql = format!(
        "SELECT {} FROM {} WHERE {} = {}",
        fenced::Identifier::new("ArtefactKey")?.quoted(dialect),
        table.name().quoted(dialect),
        table.key_column().quoted(dialect),
        dialect.placeholder(1),
    );
    let row = store
        .backend()
        .query_row(&sql, &[Value::Uuid(report)])
        .await?
        .context("the report row exists")?;
    Ok(row[0].as_str().map(str::to_owned))
}

/// A stand-in for blob storage: a directory of files that are created, never replaced.
struct Blobs {
    dir: PathBuf,
}

impl Blobs {
    fn new(dir: PathBuf) -> anyhow::Result<Self> {
        fs::create_dir_all(&dir)?;
        Ok(Blobs { dir })
    }

    /// Stores `body` under a fresh key. `create_new` makes the upload fail rather than
    /// replace an existing artefact, the local equivalent of an `If-None-Match: *` upload.
    fn put(&self, body: &str) -> anyhow::Result<String> {
        let key = Uuid::new_v4().to_string();
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(self.path(&key))?;
        file.write_all(body.as_bytes())?;
        Ok(key)
    }

    fn get(&self, key: &str) -> anyhow::Result<String> {
        Ok(fs::read_to_string(self.path(key))?)
    }

    fn keys(&self) -> anyhow::Result<Vec<String>> {
        let mut keys = Vec::new();
        for entry in fs::read_dir(&self.dir)? {
            keys.push(entry?.file_name().to_string_lossy().into_owned());
        }
        keys.sort();
        Ok(keys)
    }

    fn path(&self, key: &str) -> PathBuf {
        Path::new(&self.dir).join(key)
    }
}
