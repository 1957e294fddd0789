//! Runs the accepted texts on one database, inside fenced transactions, and holds them
//! to the oracle: every protected table unchanged, byte for byte.
//!
//! The texts run in batches, one fenced transaction each, and the protected tables are
//! read on the transaction's own connection every few texts and before it commits: a
//! batch that changed one is rolled back, and the texts since the last reading run
//! again one at a time, each followed by the reading, which names the text. A text that
//! fails on PostgreSQL or SQL Server ends its transaction there (PostgreSQL aborts it,
//! Babelfish rolls it back, even for a syntax error), taking the batch's earlier writes
//! with it: the texts since the last reading run again in a transaction of their own,
//! so that an escape among them is not hidden by a failure after it. SQLite undoes only
//! the failing statement. After the last transaction the tables are read again on the
//! pool, for what the commits made durable.

use std::time::Duration;

use fenced_guard::__private::TransactionWrite;
use fenced_guard::{Backend, Dialect, Error, Executor, Fenced, Lend, Value};

use super::schema::{Prepared, Snapshot};

/// How long one transaction may stay open: far longer than a batch takes.
const TIMEOUT: Duration = Duration::from_secs(120);

/// A text, as it is sent on one database.
pub(super) struct Sent {
    /// The text as the caller wrote it.
    pub(super) text: &'static str,
    /// The statement sent: the macro's rendering of the text for the database.
    pub(super) sql: &'static str,
    /// The macro's write of it, for a text the macro accepted.
    pub(super) write: Option<&'static TransactionWrite>,
    pub(super) values: Vec<Value>,
}

/// How the statements reach the database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Path {
    /// The macro's generated body (`__private::execute_other`): the table it writes
    /// checked against the transaction's, then `Fenced::execute`, with its screen and
    /// its recheck of the lease.
    Method,
    /// `Fenced::execute` itself, called with the text: the guard's defences alone.
    Execute,
    /// The negative control: the transaction's raw executor, `fenced.store().backend()`.
    Raw,
}

/// What running the texts found.
#[derive(Debug, Default)]
pub(super) struct Tally {
    /// Statements that ran and committed.
    pub(super) ran: usize,
    /// Rows they wrote.
    pub(super) rows: u64,
    /// Statements the guard refused before sending them.
    pub(super) refused: usize,
    /// Database errors.
    pub(super) errors: usize,
    /// Texts after which a protected table had changed.
    pub(super) escapes: Vec<&'static str>,
    pub(super) first_errors: Vec<String>,
    pub(super) first_refusals: Vec<String>,
    /// Fenced transactions begun.
    pub(super) transactions: usize,
    /// Statements sent, those sent again after a failure rolled their batch back
    /// included.
    pub(super) sends: usize,
}

impl Tally {
    fn error(&mut self, sent: &Sent, error: &Error) {
        self.errors += 1;
        if self.first_errors.len() < 8 {
            self.first_errors.push(format!("{}: {error}", sent.text));
        }
    }

    fn refusal(&mut self, sent: &Sent, error: &Error) {
        self.refused += 1;
        if self.first_refusals.len() < 8 {
            self.first_refusals.push(format!("{}: {error}", sent.text));
        }
    }

    fn add(&mut self, other: Tally) {
        self.ran += other.ran;
        self.rows += other.rows;
        self.refused += other.refused;
        self.errors += other.errors;
        self.escapes.extend(other.escapes);
        self.sends += other.sends;
        self.transactions += other.transactions;
        for e in other.first_errors {
            if self.first_errors.len() < 8 {
                self.first_errors.push(e);
            }
        }
        for r in other.first_refusals {
            if self.first_refusals.len() < 8 {
                self.first_refusals.push(r);
            }
        }
    }
}

/// What became of one statement.
enum Sending {
    Ran(u64),
    /// Refused by the guard, unsent: the transaction goes on.
    Refused(Error),
    /// A database error; whether the transaction is still open.
    Failed {
        error: Error,
        open: bool,
    },
}

async fn send<E: Executor>(fenced: &Fenced<'_, E>, sent: &Sent, path: Path) -> Sending {
    let result = match path {
        Path::Method => {
            let write = sent.write.expect("a text the macro accepted");
            fenced_guard::__private::execute_other(fenced, write, sent.values.clone()).await
        }
        Path::Execute => fenced.execute(sent.sql, &sent.values).await,
        Path::Raw => {
            fenced
                .store()
                .backend()
                .execute(sent.sql, &sent.values)
                .await
        }
    };
    match result {
        Ok(rows) => Sending::Ran(rows),
        // The screen, the recheck's refusal, a protected table at run time.
        Err(error @ (Error::StatementRefused { .. } | Error::Config(_))) => Sending::Refused(error),
        Err(error) => {
            // SQLite undoes the failing statement alone; the others, the transaction.
            let open = fenced.store().dialect() == Dialect::Sqlite
                && fenced.store().backend().transaction_open() != Some(false);
            Sending::Failed { error, open }
        }
    }
}

/// Runs `texts` on `db` in batches of `batch` texts, along `path`, and holds every
/// protected table to its state before; `one_by_one` reads the tables after every text
/// (the negative control, where most batches would change them).
pub(super) async fn run<B: Backend + Lend>(
    db: &Prepared<B>,
    texts: &[Sent],
    path: Path,
    batch: usize,
    one_by_one: bool,
) -> Tally {
    let before = db.snapshot(db.store.backend()).await;
    let mut tally = Tally::default();
    let mut pending: Vec<(&[Sent], bool)> =
        texts.chunks(batch).rev().map(|c| (c, one_by_one)).collect();
    while let Some((texts, one_by_one)) = pending.pop() {
        if texts.is_empty() {
            continue;
        }
        tally.transactions += 1;
        if one_by_one {
            tally.add(each(db, texts, path, &before).await);
        } else {
            let (counts, ended) = batched(db, texts, path, &before).await;
            tally.add(counts);
            match ended {
                Batch::Committed => {}
                Batch::Failed { unread, at, error } => {
                    tally.error(&texts[at], &error);
                    pending.push((&texts[at + 1..], false));
                    pending.push((&texts[unread..at], false));
                }
                Batch::Changed { unread, end } => {
                    pending.push((&texts[end..], false));
                    pending.push((&texts[unread..end], true));
                }
            }
        }
    }
    // What the transactions made durable, read as any other session reads it: the
    // readings on their own connections before each commit saw it already.
    if db.snapshot(db.store.backend()).await != before {
        tally
            .escapes
            .push("(a change no reading inside a transaction saw)");
    }
    tally
}

/// How a batch ended. The texts before `unread` were read (the protected tables
/// unchanged after them) before the transaction was rolled back; those from it on
/// must run again.
enum Batch {
    /// Every text sent, the protected tables unchanged, committed.
    Committed,
    /// The text at `at` failed and took the transaction with it: rolled back.
    Failed {
        unread: usize,
        at: usize,
        error: Error,
    },
    /// A protected table changed after one of the texts before `end`: rolled back.
    Changed { unread: usize, end: usize },
}

/// Texts between two readings of the protected tables inside a batch: a failure
/// rolls back the whole batch, and the texts since the last reading run again.
const READ_EVERY: usize = 12;

async fn begin<B: Backend + Lend>(db: &Prepared<B>) -> fenced_guard::FencedTransaction<'_, B> {
    db.store
        .transaction(&db.lease, TIMEOUT)
        .await
        .expect("begin a fenced transaction")
        .expect("the lease holds")
}

/// Runs `texts` in one fenced transaction, reading the protected tables on its own
/// connection every [`READ_EVERY`] texts and before it commits: the counts of the
/// texts read, and how the batch ended.
async fn batched<B: Backend + Lend>(
    db: &Prepared<B>,
    texts: &[Sent],
    path: Path,
    before: &Snapshot,
) -> (Tally, Batch) {
    let tx = begin(db).await;
    let mut read = Tally::default();
    let mut unread = 0;
    let mut since = Tally::default();
    for (at, sent) in texts.iter().enumerate() {
        read.sends += 1;
        match send(&tx, sent, path).await {
            Sending::Ran(rows) => {
                since.ran += 1;
                since.rows += rows;
            }
            Sending::Refused(error) => since.refusal(sent, &error),
            Sending::Failed { error, open: true } => since.error(sent, &error),
            Sending::Failed { error, open: false } => {
                let _ = tx.rollback().await;
                return (read, Batch::Failed { unread, at, error });
            }
        }
        let end = at + 1;
        if end % READ_EVERY == 0 || end == texts.len() {
            if db.snapshot(tx.store().backend()).await != *before {
                let _ = tx.rollback().await;
                return (read, Batch::Changed { unread, end });
            }
            read.add(std::mem::take(&mut since));
            unread = end;
        }
    }
    tx.commit().await.expect("commit");
    (read, Batch::Committed)
}

/// Runs `texts` one at a time, reading the protected tables after each: a text that
/// changed one is an escape, rolled back (with the texts before it in its transaction,
/// already read unchanged) so that the next runs on the tables as they were.
async fn each<B: Backend + Lend>(
    db: &Prepared<B>,
    texts: &[Sent],
    path: Path,
    before: &Snapshot,
) -> Tally {
    let mut tally = Tally::default();
    let mut tx = begin(db).await;
    for sent in texts {
        tally.sends += 1;
        match send(&tx, sent, path).await {
            Sending::Ran(rows) => {
                if db.snapshot(tx.store().backend()).await == *before {
                    tally.ran += 1;
                    tally.rows += rows;
                } else {
                    tally.escapes.push(sent.text);
                    let _ = tx.rollback().await;
                    tx = begin(db).await;
                    tally.transactions += 1;
                }
            }
            Sending::Refused(error) => tally.refusal(sent, &error),
            Sending::Failed { error, open } => {
                tally.error(sent, &error);
                if !open {
                    let _ = tx.rollback().await;
                    tx = begin(db).await;
                    tally.transactions += 1;
                }
            }
        }
    }
    tx.commit().await.expect("commit");
    tally
}
