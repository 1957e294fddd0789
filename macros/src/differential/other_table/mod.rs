//! The differential test of the other-table path: a method that writes another table
//! than its lease's takes a fenced transaction, and its statement is sent through
//! `Fenced::execute` unchanged.
//!
//! A seeded generator ([`generator`]) writes `INSERT`, `UPDATE` and `DELETE` texts
//! (upserts and `MERGE` too) over the lease's table, its epoch and operations tables, a
//! second fenced table declared beside it with its own, and plain tables ([`schema`]),
//! in every form of naming the table written. Each text goes through the macro's own
//! other-table check as the compiler runs it ([`verdict`]): for the portable form, and
//! for each `dialect = "..."`. Every text it accepts runs on SQLite, PostgreSQL and,
//! with `FENCED_MSSQL_URL`, SQL Server, inside fenced transactions on a valid lease,
//! through the generated method's own runtime path ([`runner`]); the oracle is that
//! every protected table (both fenced tables and their epoch and operations tables) is
//! unchanged, byte for byte.
//!
//! Negative control: the same generator, the macro's check without each database's own
//! reading and without its protected-table refusals, and each statement sent through
//! the transaction's raw executor, must change a protected table on every database.
//!
//! Every protected table must stay unchanged, too, when the texts are sent through
//! `Fenced::execute` without the macro, as any caller may: the guard's own defences
//! alone.
//!
//! `FENCED_DIFF_SEED` replays a run (the tables' names end in a per-run id, the same
//! length every run); `FENCED_DIFF_TEXTS` is how many accepted texts each database
//! runs (default 10,000; the control, and the run through `Fenced::execute` alone, a
//! fifth as many). Counts are printed as the lease-table test prints them.

mod generator;
mod runner;
mod schema;

use std::time::{Duration, Instant};

use fenced_guard::__private::TransactionWrite;
use fenced_guard::{Backend, Dialect, Lend, Value};

use self::generator::{FORMS, Flavour, Form, Generated, Generator};
use self::runner::{Path, Sent, Tally};
use self::schema::{Place, Prepared, Role, names};
use super::{macro_dialect, say, seed, wanted};
use crate::declaration::{self, Found};
use crate::statement;
use crate::transaction::{self, Checked, Checks};

/// Why the macro refuses a text on the other-table path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refusal {
    /// The table the first reading names is protected (`declaration::protected`).
    Target,
    /// [`transaction::check`]: the subset, each database's reading of the table
    /// written, the constructs it cannot follow, the lease's own table.
    Reading,
    /// The table every reading writes is protected ([`transaction::protected_target`]).
    Written,
    /// The guard's screen, at compile time ([`transaction::screened`]).
    Screen,
    /// A value parameter no placeholder uses.
    Unused,
}

/// What the macro makes of a text.
enum Verdict {
    Accepted(Checked),
    /// No reading makes it an `INSERT`, `UPDATE` or `DELETE` of a table other than the
    /// lease's: the macro takes it down the lease-table path (where it must be an
    /// `UPDATE` of the lease's table), not this test's.
    NotOtherTable,
    Refused(Refusal),
}

impl Verdict {
    fn accepted(&self) -> Option<&Checked> {
        match self {
            Verdict::Accepted(checked) => Some(checked),
            _ => None,
        }
    }
}

/// The method's value parameters, by the placeholders the text uses: `@a` text, `@b`
/// an integer.
fn parameters(text: &str) -> (Vec<String>, Vec<Value>) {
    [("a", Value::from("z")), ("b", Value::I64(2))]
        .into_iter()
        .filter(|(name, _)| text.contains(&format!("@{name}")))
        .map(|(name, value)| (name.to_owned(), value))
        .unzip()
}

/// The macro's verdict on `text` for a method that takes the fenced transaction, as
/// `expand` and `transaction::expand_other` reach it: the path, the protected table the
/// first reading names, [`transaction::check_with`], then the table every reading
/// writes and the screen; `only` as `dialect = "..."`.
fn verdict(text: &str, only: Option<Dialect>, checks: Checks, found: &Found) -> Verdict {
    let lease = names().of(Role::Lease);
    let Some((target, _)) = transaction::other_table(text, lease) else {
        return Verdict::NotOtherTable;
    };
    let found = Some(found);
    if checks.protected
        && declaration::protected(found, lease, &statement::plain_name(&target)).is_some()
    {
        return Verdict::Refused(Refusal::Target);
    }
    let (params, _) = parameters(text);
    let only = only.map(macro_dialect);
    let (result, unused) = transaction::check_with(text, lease, "method", &params, only, checks);
    let Ok(checked) = result else {
        return Verdict::Refused(Refusal::Reading);
    };
    if !unused.is_empty() {
        return Verdict::Refused(Refusal::Unused);
    }
    if checks.protected {
        if transaction::protected_target(found, lease, &target, &checked).is_some() {
            return Verdict::Refused(Refusal::Written);
        }
        if transaction::screened(found, lease, &checked).is_some() {
            return Verdict::Refused(Refusal::Screen);
        }
    }
    Verdict::Accepted(checked)
}

const DIALECTS: [Dialect; 3] = [Dialect::Sqlite, Dialect::Postgres, Dialect::Mssql];

/// A generated text and the macro's verdicts on it: for the portable form, and for each
/// dialect alone (in the order of [`DIALECTS`]).
struct Judged {
    text: &'static str,
    flavour: Flavour,
    form: Form,
    portable: Verdict,
    alone: [Verdict; 3],
}

impl Judged {
    fn new(generated: Generated, checks: Checks, found: &Found) -> Self {
        let text = generated.text;
        Judged {
            portable: verdict(&text, None, checks, found),
            alone: DIALECTS.map(|d| verdict(&text, Some(d), checks, found)),
            text: Box::leak(text.into_boxed_str()),
            flavour: generated.flavour,
            form: generated.form,
        }
    }

    fn accepted_anywhere(&self) -> bool {
        DIALECTS.iter().any(|d| self.accepted_on(*d))
    }

    /// The statements `d` runs for this text, each with the check that accepted it:
    /// the portable form's, and the one for `d` alone where it differs.
    fn sent_on(&self, d: Dialect) -> Vec<(&str, &Checked)> {
        let i = DIALECTS.iter().position(|x| *x == d).unwrap_or(0);
        let at = macro_dialect(d).index();
        let portable = statement_on(&self.portable, at);
        let mut out: Vec<(&str, &Checked)> = portable.into_iter().collect();
        if let Some(alone) = statement_on(&self.alone[i], at)
            && portable.map(|(sql, _)| sql) != Some(alone.0)
        {
            out.push(alone);
        }
        out
    }

    fn accepted_on(&self, d: Dialect) -> bool {
        !self.sent_on(d).is_empty()
    }
}

/// The statement an accepted text sends on the dialect at `at` (in the order of
/// `statement::Dialect::ALL`), and the check that accepted it.
fn statement_on(verdict: &Verdict, at: usize) -> Option<(&str, &Checked)> {
    let checked = verdict.accepted()?;
    Some((checked.sql[at].as_deref()?, checked))
}

/// The generated texts, judged.
struct Texts {
    judged: Vec<Judged>,
    took: Duration,
}

/// Generates and judges texts until every database has `wanted` to run (or forty times
/// as many are generated).
fn texts(seed: u64, wanted: usize, checks: Checks) -> Texts {
    let start = Instant::now();
    let found = schema::found();
    let mut generator = Generator::new(seed);
    let mut judged: Vec<Judged> = Vec::new();
    let mut per_database = [0usize; 3];
    while per_database.iter().any(|n| *n < wanted) && judged.len() < wanted * 40 {
        let j = Judged::new(generator.text(), checks, &found);
        for (i, d) in DIALECTS.iter().enumerate() {
            per_database[i] += usize::from(j.accepted_on(*d));
        }
        judged.push(j);
    }
    Texts {
        judged,
        took: start.elapsed(),
    }
}

fn leak(text: &str) -> &'static str {
    Box::leak(text.to_owned().into_boxed_str())
}

/// The statements `d` runs, as the generated method sends them.
fn sent_on(texts: &Texts, d: Dialect) -> Vec<Sent> {
    let lease = names().of(Role::Lease);
    let mut out = Vec::new();
    for j in &texts.judged {
        for (sql, checked) in j.sent_on(d) {
            let sql = leak(sql);
            let mut statements = [None, None, None];
            statements[macro_dialect(d).index()] = Some(sql);
            let write = Box::leak(Box::new(TransactionWrite::new(
                "method",
                leak(lease),
                leak(&checked.target),
                statements,
            )));
            out.push(Sent {
                text: j.text,
                sql,
                write: Some(write),
                values: parameters(j.text).1,
            });
        }
    }
    out
}

/// Each text as `d` runs it without the macro: as written, its placeholders numbered
/// for `d` in the order of [`parameters`].
fn sent_as_written(texts: &[&'static str], d: Dialect) -> Vec<Sent> {
    texts
        .iter()
        .map(|&text| {
            let (names, values) = parameters(text);
            let mut sql = text.to_owned();
            if let Ok(lexed) = fenced_sql::lex::lex_as(macro_dialect(d).sql(), text) {
                for token in lexed.tokens.iter().rev() {
                    let written = &text[token.range()];
                    if let Some(n) = names
                        .iter()
                        .position(|n| written.strip_prefix('@') == Some(n))
                    {
                        sql.replace_range(token.range(), &d.placeholder(n + 1));
                    }
                }
            }
            Sent {
                text,
                sql: leak(&sql),
                write: None,
                values,
            }
        })
        .collect()
}

/// The texts' verdicts, counted, said once per run.
fn say_verdicts(label: &str, texts: &Texts) {
    let count = |f: &dyn Fn(&Judged) -> bool| texts.judged.iter().filter(|j| f(j)).count();
    let refused = |r: Refusal| {
        count(&|j: &Judged| {
            matches!(j.portable, Verdict::Refused(x) if x == r)
                && j.alone.iter().all(|v| !matches!(v, Verdict::Accepted(_)))
        })
    };
    say(&format!(
        "other table, {label}: {} texts generated ({} portable, {} in one database's forms), \
         {} accepted portable; refused everywhere: {} for the table first named, {} by the \
         readings, {} for the table written, {} by the screen, {} for an unused parameter; \
         {} on the lease's own path ({:.1}s)",
        texts.judged.len(),
        count(&|j: &Judged| j.flavour == Flavour::Portable),
        count(&|j: &Judged| j.flavour != Flavour::Portable),
        count(&|j: &Judged| j.portable.accepted().is_some()),
        refused(Refusal::Target),
        refused(Refusal::Reading),
        refused(Refusal::Written),
        refused(Refusal::Screen),
        refused(Refusal::Unused),
        count(&|j: &Judged| matches!(j.portable, Verdict::NotOtherTable)),
        texts.took.as_secs_f64()
    ));
    let forms: Vec<String> = FORMS
        .iter()
        .map(|form| {
            let of = |j: &Judged| j.form == *form;
            format!(
                "{form:?} {}/{}",
                count(&of),
                count(&|j: &Judged| of(j) && j.accepted_anywhere())
            )
        })
        .collect();
    say(&format!(
        "other table, {label}, generated/accepted by form: {}",
        forms.join(", ")
    ));
}

/// The counts of one database's run, said; its first escapes, errors and refusals,
/// printed (shown when a test fails, or with `--nocapture`).
fn report(label: &str, texts: &Texts, d: Dialect, sent: usize, tally: &Tally, took: Duration) {
    let accepted = texts.judged.iter().filter(|j| j.accepted_on(d)).count();
    let alone = texts
        .judged
        .iter()
        .filter(|j| j.accepted_on(d) && j.portable.accepted().is_none())
        .count();
    say(&format!(
        "other table, {d}, {label}: {} generated, {accepted} accepted ({alone} for {d} alone; \
         {sent} statements), {} refused, {}",
        texts.judged.len(),
        texts.judged.len() - accepted,
        in_words(tally, took)
    ));
    print_firsts(tally);
}

/// What running the statements found, in words.
fn in_words(tally: &Tally, took: Duration) -> String {
    format!(
        "{} ran, {} refused at run time, {} errors, {} escapes; {} transactions, {} sends \
         ({:.1}s)",
        tally.ran,
        tally.refused,
        tally.errors,
        tally.escapes.len(),
        tally.transactions,
        tally.sends,
        took.as_secs_f64()
    )
}

fn print_firsts(tally: &Tally) {
    for e in tally.escapes.iter().take(3) {
        println!("  escape: {e:?}");
    }
    for e in &tally.first_errors {
        println!("  error: {e:?}");
    }
    for e in &tally.first_refusals {
        println!("  refused at run time: {e:?}");
    }
}

/// How the run goes on one database.
#[derive(Clone, Copy)]
struct Run {
    path: Path,
    one_by_one: bool,
}

/// Texts per fenced transaction.
fn batch(d: Dialect) -> usize {
    match d {
        Dialect::Sqlite => 1000,
        Dialect::Postgres => 500,
        Dialect::Mssql => 250,
    }
}

async fn run_prepared<B: Backend + Lend + Clone>(backend: B, sent: &[Sent], run: Run) -> Tally {
    let d = backend.dialect();
    let db = Prepared::new(backend).await;
    runner::run(&db, sent, run.path, batch(d), run.one_by_one).await
}

/// Held by the SQL Server run of each test, which run in parallel.
static MSSQL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Runs `sent` on a database of `d` made for this run, and drops it after: what it
/// found, and how long it took; `None` for SQL Server without `FENCED_MSSQL_URL`.
async fn run_on(d: Dialect, sent: &[Sent], run: Run) -> Option<(Tally, Duration)> {
    // One SQL Server run at a time: every run of the process makes and drops the same
    // `dbo` tables.
    let _alone = match d {
        Dialect::Mssql => Some(MSSQL.lock().await),
        Dialect::Sqlite | Dialect::Postgres => None,
    };
    let start = Instant::now();
    let (place, tally) = match d {
        Dialect::Sqlite => {
            let (place, backend) = Place::sqlite().await;
            (place, run_prepared(backend, sent, run).await)
        }
        Dialect::Postgres => {
            let (place, backend) = Place::postgres().await;
            (place, run_prepared(backend, sent, run).await)
        }
        Dialect::Mssql => {
            let (place, backend) = Place::mssql().await?;
            (place, run_prepared(backend, sent, run).await)
        }
    };
    place.remove().await;
    Some((tally, start.elapsed()))
}

#[tokio::test(flavor = "current_thread")]
async fn accepted_texts_leave_protected_tables_unchanged() {
    let seed = seed();
    let wanted = wanted();
    say(&format!(
        "other table: FENCED_DIFF_SEED={seed} FENCED_DIFF_TEXTS={wanted}"
    ));
    let texts = texts(seed, wanted, Checks::ALL);
    say_verdicts("checks on", &texts);
    let mut ran = Vec::new();
    for d in DIALECTS {
        let sent = sent_on(&texts, d);
        let accepted = texts.judged.iter().filter(|j| j.accepted_on(d)).count();
        assert!(
            accepted >= wanted,
            "{d}: only {accepted} texts were accepted"
        );
        let run = Run {
            path: Path::Method,
            one_by_one: false,
        };
        let Some((tally, took)) = run_on(d, &sent, run).await else {
            continue;
        };
        report("checks on", &texts, d, sent.len(), &tally, took);
        ran.push((d, sent.len(), tally));
    }
    for (d, sent, tally) in &ran {
        assert!(
            tally.escapes.is_empty(),
            "{d}: accepted texts changed a protected table: {:?}",
            tally.escapes
        );
        assert_eq!(
            tally.ran + tally.refused + tally.errors,
            *sent,
            "{d}: every statement is accounted for"
        );
        assert!(
            tally.errors * 10 <= *sent,
            "{d}: {} of {sent} statements failed ({:?})",
            tally.errors,
            tally.first_errors
        );
    }
}

/// The negative control: with the databases' own readings and the protected-table
/// refusals off, and the statements sent raw, texts change protected tables.
#[tokio::test(flavor = "current_thread")]
async fn without_the_checks_texts_change_protected_tables() {
    let seed = seed();
    let wanted = wanted() / 5;
    let off = Checks {
        own_reading: false,
        protected: false,
    };
    let texts = texts(seed, wanted, off);
    say_verdicts("checks off", &texts);
    let found = schema::found();
    for d in DIALECTS {
        let sent = sent_on(&texts, d);
        let run = Run {
            path: Path::Raw,
            one_by_one: true,
        };
        let Some((tally, took)) = run_on(d, &sent, run).await else {
            continue;
        };
        report("checks off", &texts, d, sent.len(), &tally, took);
        assert!(
            !tally.escapes.is_empty(),
            "{d}: with the checks off, no generated text changed a protected table: the \
             generator cannot find what the checks are for"
        );
        // Each is refused with the checks on, for every form that runs on `d`.
        for text in &tally.escapes {
            let control = texts
                .judged
                .iter()
                .find(|j| j.text == *text)
                .unwrap_or_else(|| panic!("{d}: an escape that names no text: {text}"));
            let generated = Generated {
                text: (*text).to_owned(),
                flavour: control.flavour,
                form: control.form,
            };
            let judged = Judged::new(generated, Checks::ALL, &found);
            assert!(
                !judged.accepted_on(d),
                "{d}: a text that changed a protected table is accepted by the checks: {text}"
            );
        }
    }
}

/// The guard's own defences, the macro left out: every generated text, sent to
/// `Fenced::execute` as written, is refused, fails, or leaves every protected table
/// unchanged. (A caller may send any statement through a `Fenced`; the macro is not
/// the only way in.)
#[tokio::test(flavor = "current_thread")]
async fn through_fenced_execute_alone_protected_tables_stay_unchanged() {
    let count = wanted() / 5;
    let mut generator = Generator::new(seed());
    let texts: Vec<&'static str> = (0..count).map(|_| leak(&generator.text().text)).collect();
    let mut ran = Vec::new();
    for d in DIALECTS {
        let sent = sent_as_written(&texts, d);
        let run = Run {
            path: Path::Execute,
            one_by_one: false,
        };
        let Some((tally, took)) = run_on(d, &sent, run).await else {
            continue;
        };
        say(&format!(
            "other table, {d}, through Fenced::execute alone: {count} generated, {}",
            in_words(&tally, took)
        ));
        print_firsts(&tally);
        ran.push((d, tally));
    }
    for (d, tally) in &ran {
        assert!(
            tally.escapes.is_empty(),
            "{d}: texts sent through Fenced::execute changed a protected table: {:?}",
            tally.escapes
        );
        assert!(
            tally.ran > 0 && tally.refused > 0,
            "{d}: the texts must exercise both the guard's refusals and its passes"
        );
    }
}
