//! The article's story, replayed twice against a real database.
//!
//! Worker A takes the lease on a report and pauses before publishing. Its lease expires
//! by the database's clock; worker B takes over, builds and publishes. Then A resumes and
//! writes. A report has lines, in a table of their own, written in the same transaction
//! as the report. The first run uses a naive lease: the lock is real, but the writes are
//! a plain transaction (`UPDATE ... WHERE key = @key` and the lines' `INSERT`s), so A's
//! stale report overwrites B's and A's lines join B's. The second run publishes through
//! `fenced`, in a fenced transaction: its first statement checks A's lease and locks
//! the row, the database refuses it, and none of A's lines is ever visible.
//!
//! ```text
//! cargo run --example worker_came_back --features sqlite    # embedded SQLite, temp file
//! cargo run --example worker_came_back --features postgres -- \
//!     --database-url "host=127.0.0.1 user=postgres dbname=test"
//! cargo run --example worker_came_back --features mssql -- \
//!     --database-url "server=tcp:localhost,1433;user=sa;password=...;TrustServerCertificate=true"
//! ```

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use fenced::{ColumnType, Executor, FencedTable, Lease, Lend, Outcome, Store, Value, Wait};
use tokio::sync::oneshot;
use uuid::Uuid;

/// Short enough that the demonstration runs in about a second, long enough that the
/// statements themselves never outlive it.
const LEASE_TTL: Duration = Duration::from_millis(400);

/// How long a worker's transaction may stay open.
const TRANSACTION_TIMEOUT: Duration = Duration::from_secs(10);

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let database_url = parse_args()?;
    let table = FencedTable::builder()
        .table("ReportPublication")
        .column("Payload", ColumnType::Text)
        .build()?;

    match database_url {
        None => run_sqlite(table).await,
        Some(url) if is_ado_connection_string(&url) => connect_mssql(&url, table).await,
        Some(url) => connect_postgres(&url, table).await,
    }
}

fn parse_args() -> anyhow::Result<Option<String>> {
    let mut args = std::env::args().skip(1);
    let mut url = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--database-url" => {
                url = Some(args.next().context("--database-url needs a value")?);
            }
            "-h" | "--help" => {
                println!(
                    "usage: worker_came_back [--database-url URL]\n\n\
                     Without a URL the story runs on an embedded SQLite file (--features sqlite).\n\
                     A PostgreSQL URL (postgres://... or host=...) needs --features postgres;\n\
                     an ADO.NET connection string (server=...) needs --features mssql."
                );
                std::process::exit(0);
            }
            other => bail!("unexpected argument `{other}`; see --help"),
        }
    }
    Ok(url)
}

fn is_ado_connection_string(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    lower.starts_with("server=") || lower.contains(";server=") || lower.starts_with("data source=")
}

#[cfg(feature = "sqlite")]
async fn run_sqlite(table: FencedTable) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("reports.db");
    let backend = fenced::Sqlite::open(&path).await?;
    let label = format!("embedded SQLite ({})", path.display());
    run(Store::new(backend, table), &label).await
}

#[cfg(not(feature = "sqlite"))]
async fn run_sqlite(_table: FencedTable) -> anyhow::Result<()> {
    bail!("this build has no SQLite backend: run with `--features sqlite`, or give --database-url")
}

#[cfg(feature = "postgres")]
async fn connect_postgres(url: &str, table: FencedTable) -> anyhow::Result<()> {
    let backend = fenced::Postgres::connect(url).await?;
    run(Store::new(backend, table), "PostgreSQL").await
}

#[cfg(not(feature = "postgres"))]
async fn connect_postgres(_url: &str, _table: FencedTable) -> anyhow::Result<()> {
    bail!("this build has no PostgreSQL backend: run with `--features postgres`")
}

#[cfg(feature = "mssql")]
async fn connect_mssql(url: &str, table: FencedTable) -> anyhow::Result<()> {
    let backend = fenced::Mssql::connect(url).await?;
    run(Store::new(backend, table), "SQL Server").await
}

#[cfg(not(feature = "mssql"))]
async fn connect_mssql(_url: &str, _table: FencedTable) -> anyhow::Result<()> {
    bail!("this build has no SQL Server backend: run with `--features mssql`")
}

async fn run<B: Lend>(store: Store<B>, database: &str) -> anyhow::Result<()> {
    store.create_schema().await?;
    create_lines_table(&store).await?;

    let naive = replay(&store, Writes::Naive).await?;
    let fenced = replay(&store, Writes::Fenced).await?;

    println!("The worker that came back: lease of {LEASE_TTL:?}, on {database}\n");
    print!("{}", side_by_side(&naive, &fenced));

    // The story is only worth telling if it came out as the article says; CI runs this.
    anyhow::ensure!(
        naive.stale_write_landed && !fenced.stale_write_landed,
        "expected the naive run to lose B's report and the fenced run to keep it, lines included"
    );
    Ok(())
}

/// How the workers write the report once they hold the lease.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Writes {
    /// A plain transaction, `UPDATE ... WHERE key = @key` and the lines: the lock was
    /// taken, but the writes do not carry it.
    Naive,
    /// A fenced transaction: the lease checked and its row locked first, then the lines
    /// and the guard's publication.
    Fenced,
}

impl Writes {
    fn title(self) -> &'static str {
        match self {
            Writes::Naive => "naive lease: writes by key only",
            Writes::Fenced => "fenced: writes carry the lease",
        }
    }
}

/// One line of a timeline.
struct Event {
    at: Duration,
    text: String,
}

struct Timeline {
    title: &'static str,
    events: Vec<Event>,
    verdict: String,
    /// Whether A's stale report replaced B's, or any of A's lines is visible.
    stale_write_landed: bool,
}

struct Clock(Instant);

impl Clock {
    fn event(&self, text: impl Into<String>) -> Event {
        Event {
            at: self.0.elapsed(),
            text: text.into(),
        }
    }
}

/// Plays the story once on a fresh report row and reads the row back at the end.
async fn replay<B: Lend>(store: &Store<B>, writes: Writes) -> anyhow::Result<Timeline> {
    let report = Uuid::new_v4();
    store.provision(report).await?;
    let clock = Clock(Instant::now());
    let mut events = Vec::new();

    // A takes the lease and starts building.
    let lease_a = store
        .try_acquire(report, LEASE_TTL)
        .await?
        .context("a freshly provisioned report is free")?;
    events.push(clock.event(format!("A acquires: generation {}", lease_a.generation())));
    events.push(clock.event("A builds, then pauses (GC, debugger...)"));

    // A's pause is a task blocked on a channel: nothing A does can renew its lease.
    let (resume_a, paused) = oneshot::channel::<()>();
    let worker_a = async {
        paused.await.ok();
        let at = clock.event("A resumes and publishes its report");
        let outcome = write(store, writes, &lease_a, "A").await?;
        anyhow::Ok((at, outcome))
    };

    // B waits for the lease, which frees only when the database's clock passes A's expiry.
    let worker_b = async {
        let mut b_events = Vec::new();
        let lease_b = store
            .acquire(
                report,
                LEASE_TTL,
                &Wait::timeout(Duration::from_secs(10)),
                &Default::default(),
            )
            .await?
            .context("A's lease should have expired within 10 s")?;
        b_events.push(clock.event(format!(
            "A's lease expired; B acquires: generation {}",
            lease_b.generation()
        )));
        let outcome = write(store, writes, &lease_b, "B").await?;
        b_events.push(clock.event(format!("B publishes its report: {}", describe(outcome))));
        resume_a.send(()).ok();
        anyhow::Ok(b_events)
    };

    let ((a_resumes, a_outcome), b_events) = tokio::try_join!(worker_a, worker_b)?;
    events.extend(b_events);
    events.push(a_resumes);
    events.push(clock.event(format!("A's write: {}", describe(a_outcome))));

    let (payload, published) = read_back(store, report).await?;
    let (lines_of_a, lines_of_b) = (
        count_lines(store, report, "A").await?,
        count_lines(store, report, "B").await?,
    );
    let correct = payload.as_deref() == Some("report by B") && lines_of_a == 0;
    let verdict = format!(
        "row holds {} (published generation {published}), lines: {lines_of_b} of B, \
         {lines_of_a} of A: {}",
        payload
            .as_deref()
            .map_or("nothing".into(), |p| format!("\"{p}\"")),
        if correct {
            "correct"
        } else {
            "B's result is lost"
        }
    );
    Ok(Timeline {
        title: writes.title(),
        events,
        verdict,
        stale_write_landed: !correct,
    })
}

/// The lines each worker writes with its report.
const LINES: [&str; 2] = ["total: 3", "checked: yes"];

/// Writes `worker`'s report and its lines the way `writes` says.
async fn write<B: Lend>(
    store: &Store<B>,
    writes: Writes,
    lease: &Lease,
    worker: &str,
) -> anyhow::Result<Outcome> {
    let payload = format!("report by {worker}");
    let insert = insert_line_sql(store.dialect());
    match writes {
        Writes::Fenced => {
            let Some(tx) = store.transaction(lease, TRANSACTION_TIMEOUT).await? else {
                return Ok(Outcome::Refused);
            };
            for line in LINES {
                let line = format!("{worker}: {line}");
                tx.execute(&insert, &[Value::from(lease.key()), Value::from(line)])
                    .await?;
            }
            let published = tx
                .store()
                .publish(lease, &[("Payload", Value::from(payload))])
                .await?;
            if published.is_refused() {
                tx.rollback().await?;
                return Ok(published);
            }
            tx.commit().await?;
            Ok(Outcome::Applied)
        }
        Writes::Naive => {
            // What code without fencing sends: the lease was checked in memory, the row
            // is found by key alone, and the lines go with it in a plain transaction.
            let dialect = store.dialect();
            let table = store.table();
            let sql = format!(
                "UPDATE {} SET {} = {}, {} = {} WHERE {} = {}",
                table.name().quoted(dialect),
                quote(dialect, "Payload"),
                dialect.placeholder(1),
                table.published_column().quoted(dialect),
                dialect.placeholder(2),
                table.key_column().quoted(dialect),
                dialect.placeholder(3),
            );
            let conn = store.backend().lend().await?;
            conn.execute_batch(fenced::dialect::begin(dialect)).await?;
            let rows = conn
                .execute(
                    &sql,
                    &[
                        Value::from(payload),
                        Value::I64(lease.generation()),
                        Value::from(lease.key()),
                    ],
                )
                .await?;
            for line in LINES {
                let line = format!("{worker}: {line}");
                conn.execute(&insert, &[Value::from(lease.key()), Value::from(line)])
                    .await?;
            }
            conn.execute_batch(fenced::dialect::commit(dialect)).await?;
            B::give_back(conn);
            Ok(Outcome::from_rows(rows))
        }
    }
}

/// The report lines' table: the report's key and one line of text.
async fn create_lines_table<B: Lend>(store: &Store<B>) -> anyhow::Result<()> {
    let dialect = store.dialect();
    let (report, line) = (quote(dialect, "Report"), quote(dialect, "Line"));
    let sql = match dialect {
        fenced::Dialect::Postgres => format!(
            "CREATE TABLE IF NOT EXISTS {} ({report} uuid NOT NULL, {line} text NOT NULL)",
            quote(dialect, "ReportLine")
        ),
        fenced::Dialect::Sqlite => format!(
            "CREATE TABLE IF NOT EXISTS {} ({report} text NOT NULL, {line} text NOT NULL)",
            quote(dialect, "ReportLine")
        ),
        fenced::Dialect::Mssql => format!(
            "IF OBJECT_ID(N'ReportLine') IS NULL CREATE TABLE {} \
             ({report} uniqueidentifier NOT NULL, {line} nvarchar(200) NOT NULL)",
            quote(dialect, "ReportLine")
        ),
    };
    store.backend().execute_batch(&sql).await?;
    Ok(())
}

fn insert_line_sql(dialect: fenced::Dialect) -> String {
    format!(
        "INSERT INTO {} ({}, {}) VALUES ({}, {})",
        quote(dialect, "ReportLine"),
        quote(dialect, "Report"),
        quote(dialect, "Line"),
        dialect.placeholder(1),
        dialect.placeholder(2)
    )
}

/// How many lines of `report` `worker` wrote.
async fn count_lines<B: Lend>(store: &Store<B>, report: Uuid, worker: &str) -> anyhow::Result<i64> {
    let dialect = store.dialect();
    let sql = format!(
        "SELECT CAST(COUNT(*) AS bigint) FROM {} WHERE {} = {} AND {} LIKE {}",
        quote(dialect, "ReportLine"),
        quote(dialect, "Report"),
        dialect.placeholder(1),
        quote(dialect, "Line"),
        dialect.placeholder(2)
    );
    let count = store
        .backend()
        .query_i64(
            &sql,
            &[Value::Uuid(report), Value::from(format!("{worker}: %"))],
        )
        .await?
        .context("a count")?;
    Ok(count)
}

fn quote(dialect: fenced::Dialect, column: &str) -> String {
    fenced::Identifier::new(column)
        .expect("a valid column name")
        .quoted(dialect)
}

async fn read_back<B: Lend>(
    store: &Store<B>,
    report: Uuid,
) -> anyhow::Result<(Option<String>, i64)> {
    let dialect = store.dialect();
    let table = store.table();
    let sql = format!(
        "SELECT {}, {} FROM {} WHERE {} = {}",
        quote(dialect, "Payload"),
        table.published_column().quoted(dialect),
        table.name().quoted(dialect),
        table.key_column().quoted(dialect),
        dialect.placeholder(1),
    );
    let row = store
        .backend()
        .query_row(&sql, &[Value::Uuid(report)])
        .await?
        .context("the report row exists")?;
    let payload = row[0].as_str().map(str::to_owned);
    let published = row[1]
        .as_i64()
        .context("published generation is an integer")?;
    Ok((payload, published))
}

fn describe(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Applied => "applied",
        Outcome::Refused => "REFUSED by the database",
    }
}

const COLUMN: usize = 56;

fn side_by_side(left: &Timeline, right: &Timeline) -> String {
    let mut out = String::new();
    let row = |out: &mut String, l: &str, r: &str| {
        let _ = writeln!(out, "  {l:<COLUMN$} | {r}");
    };
    row(&mut out, left.title, right.title);
    row(&mut out, &"-".repeat(COLUMN), &"-".repeat(COLUMN));
    let lines = left.events.len().max(right.events.len());
    let line = |t: &Timeline, i: usize| {
        t.events
            .get(i)
            .map(|e| format!("{:>5} ms  {}", e.at.as_millis(), e.text))
            .unwrap_or_default()
    };
    for i in 0..lines {
        row(&mut out, &line(left, i), &line(right, i));
    }
    row(&mut out, &"-".repeat(COLUMN), &"-".repeat(COLUMN));
    let (l, r) = (wrap(&left.verdict), wrap(&right.verdict));
    for i in 0..l.len().max(r.len()) {
        let cell = |lines: &[String]| lines.get(i).cloned().unwrap_or_default();
        row(&mut out, &cell(&l), &cell(&r));
    }
    out
}

/// Splits a verdict into lines that fit a column.
fn wrap(text: &str) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split(' ') {
        let current = lines.last_mut().expect("never empty");
        if !current.is_empty() && current.len() + 1 + word.len() > COLUMN {
            lines.push(word.to_owned());
        } else {
            if !current.is_empty() {
                current.push(' ');
            }
            current.push_str(word);
        }
    }
    lines
}
