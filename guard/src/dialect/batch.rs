//! Statements over many rows at once: the batched renewal and the claim (and the claim
//! of one row of any key, which looks through the table as the claim of many does).
//!
//! Both keep every per-row condition of their one-row counterparts ([`renew`] and
//! [`acquire`]) and bind every value as a parameter. Each returns one row per row it
//! changed, identifying it, so that the caller learns each lease's outcome separately:
//! `RETURNING` on PostgreSQL and SQLite; on SQL Server, no `OUTPUT` (refused on a table
//! with a trigger, see [`acquire`]): the rows are read back inside the write's
//! transaction into a table variable, returned after the commit.
//!
//! | statement | parameters |
//! |---|---|
//! | [`renew_batch`] | for the `i`-th lease (from 0): `4i+1` key, `4i+2` generation, `4i+3` owner, `4i+4` ttl in milliseconds; returns key, generation and owner of each lease renewed |
//! | [`claim`] | 1 how many rows at most, 2 the new owner, 3 ttl in milliseconds, then the value of each condition that has one, in order, then the candidate keys; returns key, new generation and epoch of each row claimed |
//! | [`claim_one`] (PostgreSQL) | 1 the block to start at, `(block,0)` as text, 2 the new owner, 3 ttl in milliseconds, then the value of each condition that has one, in order; returns key, new generation and epoch of the row claimed |
//! | [`table_blocks`] (PostgreSQL) | 1 the fenced table's name, quoted; returns its blocks |
//!
//! [`renew`]: super::renew
//! [`acquire`]: super::acquire

use super::{Dialect, epoch_subquery, q};
use crate::claim::filter::Test;
use crate::mssql::dialect as mssql;
use crate::table::{FencedTable, Identifier};

/// The alias of the fenced table's row being changed.
const ROW: &str = "fenced_row";
/// The alias of the rows a claim looks through.
const FREE: &str = "fenced_free";
/// The alias of the rows a claim chose (PostgreSQL).
const CHOSEN: &str = "fenced_chosen";
/// Where a claim of any rows starts looking (PostgreSQL): a random block.
const START: &str = "fenced_start";
/// The current epoch, read once for the whole claim (PostgreSQL): column `e`.
const EPOCH: &str = "fenced_epoch";
/// The alias of the leases a batched renewal carries: columns `k`, `g`, `o`, `ttl`.
const BATCH: &str = "fenced_batch";

/// `alias.column`, the column quoted.
fn at(dialect: Dialect, alias: &str, column: &Identifier) -> String {
    format!("{alias}.{}", q(dialect, column))
}

/// The row under `alias` is free to acquire: never leased or released, expired by the
/// database's clock, or acquired in another epoch (as in [`acquire`](super::acquire)).
/// `current` is the current epoch.
fn free(dialect: Dialect, table: &FencedTable, alias: &str, current: &str) -> String {
    let expiry = at(dialect, alias, table.expiry_column());
    format!(
        "({expiry} IS NULL OR {expiry} <= {} OR {} <> {current})",
        dialect.clock(),
        at(dialect, alias, table.epoch_column()),
    )
}

/// The renewal's fence on the row under [`ROW`] for the lease under [`BATCH`], in two
/// parts: the row is the lease's (key, generation and owner equal), and it is live
/// (unexpired by the database's clock, in the current epoch). Together, the conditions
/// of [`renew`](super::renew), row by row.
fn batch_fence(dialect: Dialect, table: &FencedTable) -> (String, String) {
    (
        format!(
            "{} = {BATCH}.k AND {} = {BATCH}.g AND {} = {BATCH}.o",
            at(dialect, ROW, table.key_column()),
            at(dialect, ROW, table.generation_column()),
            at(dialect, ROW, table.owner_column()),
        ),
        format!(
            "{} > {} AND {} = {}",
            at(dialect, ROW, table.expiry_column()),
            dialect.clock(),
            at(dialect, ROW, table.epoch_column()),
            epoch_subquery(dialect, table)
        ),
    )
}

/// The `VALUES` rows of `rows` leases, four parameters each; on PostgreSQL each cast to
/// its column's type, which a `VALUES` list does not infer.
fn batch_values(dialect: Dialect, table: &FencedTable, rows: usize) -> String {
    let p = |n: usize| dialect.placeholder(n);
    let row = |i: usize| {
        let n = 4 * i;
        match dialect {
            Dialect::Postgres => format!(
                "({}::{}, {}::bigint, {}::uuid, {}::bigint)",
                p(n + 1),
                dialect.key_sql_type(table.key_type()),
                p(n + 2),
                p(n + 3),
                p(n + 4)
            ),
            Dialect::Sqlite | Dialect::Mssql => {
                format!("({}, {}, {}, {})", p(n + 1), p(n + 2), p(n + 3), p(n + 4))
            }
        }
    };
    let rows: Vec<String> = (0..rows).map(row).collect();
    format!("VALUES {}", rows.join(", "))
}

/// Renews `rows` leases (at least one) in one statement: each lease's expiry moves to
/// `now + its ttl` where its row still matches it as [`renew`](super::renew) requires
/// (key, generation, owner, `expiry > now`, current epoch), so a late renewal never
/// revives. Returns key, generation and owner of each row renewed; a lease without a
/// row in the answer was refused. On PostgreSQL and SQL Server each row also carries 1,
/// and the leases whose rows other transactions hold locked come back too, with 0:
/// skipped, not refused (SQLite's single writer has no row locks to skip).
///
/// A lease given twice is renewed once and returned once.
pub fn renew_batch(dialect: Dialect, table: &FencedTable, rows: usize) -> String {
    let name = table.name().quoted(dialect);
    let expiry = q(dialect, table.expiry_column());
    let values = batch_values(dialect, table, rows);
    let (lease, live) = batch_fence(dialect, table);
    let returned = [
        table.key_column(),
        table.generation_column(),
        table.owner_column(),
    ];
    match dialect {
        // Rows another transaction holds locked (a fenced transaction's own lease among
        // them) are skipped, not waited for, and returned with a 0: the renewal of the
        // others does not wait on them.
        Dialect::Postgres => {
            let key = q(dialect, table.key_column());
            format!(
                "WITH {BATCH} (k, g, o, ttl) AS ({values}), \
                 fenced_unlocked AS (SELECT {ROW}.{key} AS k FROM {name} AS {ROW} \
                 WHERE {ROW}.{key} IN (SELECT k FROM {BATCH}) FOR NO KEY UPDATE SKIP LOCKED), \
                 fenced_renewed AS (UPDATE {name} AS {ROW} \
                 SET {expiry} = {} + {BATCH}.ttl * interval '1 millisecond' FROM {BATCH} \
                 WHERE {lease} AND {live} AND {ROW}.{key} IN (SELECT k FROM fenced_unlocked) \
                 RETURNING {}) \
                 SELECT *, 1 FROM fenced_renewed UNION ALL \
                 SELECT {BATCH}.k, {BATCH}.g, {BATCH}.o, 0 FROM {BATCH} \
                 WHERE {BATCH}.k NOT IN (SELECT k FROM fenced_unlocked) \
                 AND EXISTS (SELECT 1 FROM {name} AS fenced_locked \
                 WHERE fenced_locked.{key} = {BATCH}.k)",
                dialect.clock(),
                returned.map(|c| at(dialect, ROW, c)).join(", ")
            )
        }
        // SQLite's RETURNING may name only the updated table's columns, unqualified.
        Dialect::Sqlite => format!(
            "WITH {BATCH} (k, g, o, ttl) AS ({values}) \
             UPDATE {name} AS {ROW} SET {expiry} = {} + {BATCH}.ttl FROM {BATCH} \
             WHERE {lease} AND {live} RETURNING {}",
            dialect.clock(),
            returned.map(|c| q(dialect, c)).join(", ")
        ),
        // The leases go into a table variable first, which both the UPDATE and the
        // read-back join. The rows no other transaction holds are locked first
        // (`READPAST` skips the others, a fenced transaction's lease among them) and only
        // they are renewed; the read-back, in the UPDATE's transaction, returns the rows
        // that match the fence after it: those it renewed, held by its locks (a row
        // renewed too late to be unexpired now is not returned: refused, as it should).
        // A skipped row is returned with a 0; its existence is read without waiting for
        // its lock (`READUNCOMMITTED`), as PostgreSQL's statement reads it.
        Dialect::Mssql => {
            let key_type = dialect.key_column_type(table.key_type());
            let key = q(dialect, table.key_column());
            let body = format!(
                "INSERT INTO @fenced_batch (k, g, o, ttl) {values}; \
                 INSERT INTO @fenced_unlocked (k) SELECT {ROW}.{key} FROM {name} AS {ROW} \
                 WITH (UPDLOCK, READPAST, ROWLOCK) \
                 WHERE {ROW}.{key} IN (SELECT k FROM @fenced_batch); \
                 UPDATE {ROW} SET {expiry} = DATEADD(millisecond, CAST({BATCH}.ttl AS int), {}) \
                 FROM {name} AS {ROW} JOIN @fenced_batch AS {BATCH} ON {lease} \
                 WHERE {live} AND {ROW}.{key} IN (SELECT k FROM @fenced_unlocked); \
                 INSERT INTO @fenced_renewed (k, g, o, r) SELECT {}, 1 FROM {name} AS {ROW} \
                 JOIN @fenced_batch AS {BATCH} ON {lease} \
                 WHERE {live} AND {ROW}.{key} IN (SELECT k FROM @fenced_unlocked); \
                 INSERT INTO @fenced_renewed (k, g, o, r) SELECT {BATCH}.k, {BATCH}.g, \
                 {BATCH}.o, 0 FROM @fenced_batch AS {BATCH} \
                 WHERE {BATCH}.k NOT IN (SELECT k FROM @fenced_unlocked) \
                 AND EXISTS (SELECT 1 FROM {name} AS fenced_locked WITH (READUNCOMMITTED) \
                 WHERE fenced_locked.{key} = {BATCH}.k);",
                dialect.clock(),
                returned.map(|c| at(dialect, ROW, c)).join(", ")
            );
            format!(
                "DECLARE @fenced_batch TABLE (k {key_type}, g bigint, o uniqueidentifier, \
                 ttl bigint); \
                 DECLARE @fenced_unlocked TABLE (k {key_type}); \
                 DECLARE @fenced_renewed TABLE (k {key_type}, g bigint, o uniqueidentifier, \
                 r int); \
                 {} SELECT k, g, o, r FROM @fenced_renewed",
                mssql::in_transaction(&body)
            )
        }
    }
}

/// A claim's tests of a candidate row under [`FREE`]: each of `conditions` (a
/// [`Test::Compare`] binds its value, from parameter 4 on, in order), then the row
/// being free. `current` is the current epoch.
fn candidate_tests(
    dialect: Dialect,
    table: &FencedTable,
    conditions: &[(&Identifier, Test)],
    current: &str,
) -> Vec<String> {
    let mut next = 4;
    let mut tests = Vec::with_capacity(conditions.len() + 1);
    for (column, test) in conditions {
        let column = at(dialect, FREE, column);
        tests.push(match test {
            Test::Compare(comparison) => {
                next += 1;
                format!(
                    "{column} {} {}",
                    comparison.operator(),
                    dialect.placeholder(next - 1)
                )
            }
            Test::IsNull => format!("{column} IS NULL"),
            Test::IsNotNull => format!("{column} IS NOT NULL"),
        });
    }
    tests.push(free(dialect, table, FREE, current));
    tests
}

/// What a claim sets in each row it takes, as [`acquire`](super::acquire) does: the
/// generation bumped, owner parameter 2, expiry `now +` parameter 3 milliseconds, and
/// the epoch `current`.
fn claim_assignments(dialect: Dialect, table: &FencedTable, current: &str) -> String {
    format!(
        "{} = {} + 1, {} = {}, {} = {}, {} = {current}",
        q(dialect, table.generation_column()),
        at(dialect, ROW, table.generation_column()),
        q(dialect, table.owner_column()),
        dialect.placeholder(2),
        q(dialect, table.expiry_column()),
        dialect.expiry_after(3),
        q(dialect, table.epoch_column()),
    )
}

/// PostgreSQL: the `WITH` entry [`EPOCH`] that reads the epoch once for a whole claim.
fn postgres_epoch_entry(table: &FencedTable) -> String {
    format!(
        "{EPOCH} AS MATERIALIZED (SELECT {} AS e)",
        epoch_subquery(Dialect::Postgres, table)
    )
}

/// PostgreSQL: a claim's `UPDATE` up to the key its `WHERE` compares, after `with`.
fn postgres_claim_head(table: &FencedTable, with: &str, set: &str) -> String {
    let d = Dialect::Postgres;
    format!(
        "{with}UPDATE {} AS {ROW} SET {set} WHERE {}",
        table.name().quoted(d),
        at(d, ROW, table.key_column())
    )
}

/// PostgreSQL: the end of a claim, after the rows it chose: each row still free when
/// updated, and key, new generation and epoch returned.
fn postgres_claim_tail(table: &FencedTable, current: &str) -> String {
    format!(
        "AND {} {}",
        free(Dialect::Postgres, table, ROW, current),
        postgres_claim_returning(table)
    )
}

/// PostgreSQL: what a claim returns of each row it took: key, new generation, epoch.
fn postgres_claim_returning(table: &FencedTable) -> String {
    let returned = [
        table.key_column(),
        table.generation_column(),
        table.epoch_column(),
    ];
    format!(
        "RETURNING {}",
        returned.map(|c| at(Dialect::Postgres, ROW, c)).join(", ")
    )
}

/// Which part of the table a [`claim_one`] looks through, from the block the claim
/// starts at (parameter 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClaimPart {
    /// From the start to the table's end, rows added meanwhile included.
    FromStart,
    /// From the table's first block up to the start: where a claim looks once the
    /// other part had no free row.
    BeforeStart,
}

/// Claims one free row among the candidates on PostgreSQL, looking through one part of
/// the table: a [`claim`] of one row of any key, for what one row costs the server.
///
/// Parameter 1 is the block the claim starts at, a row position `(block,0)` as text,
/// which the caller draws: the claims of many workers, each from its own random block,
/// do not all pass the same rows, which others hold or have just taken. Parameters 2
/// and 3, the new owner and the ttl in milliseconds, and the conditions' values from
/// parameter 4 on are [`claim`]'s. Returns key, new generation and epoch of the row
/// claimed, if one was.
///
/// The row is chosen by a scalar subquery (a TID range scan, `LIMIT 1 FOR NO KEY
/// UPDATE SKIP LOCKED`) and updated by key; unlike [`claim`] of any rows, one statement
/// looks through one part only, so a claim that finds no row
/// [`FromStart`](ClaimPart::FromStart) asks again [`BeforeStart`](ClaimPart::BeforeStart).
/// [`claim`]'s single statement over both parts, which draws its own start, costs the
/// server about a third more for one row (`BENCHMARKS.md`).
///
/// The `UPDATE` does not test the row free again, as [`claim`]'s does: the subquery's
/// lock is taken on the row's latest version, which PostgreSQL tests against the
/// subquery's conditions once locked (in `READ COMMITTED`; a later isolation level
/// fails the statement instead), and the lock keeps every other writer off the row
/// until the claim ends. A row free then stays free: an expiry stays past, and the
/// epoch only moves on.
pub fn claim_one(
    table: &FencedTable,
    part: ClaimPart,
    conditions: &[(&Identifier, Test)],
) -> String {
    let d = Dialect::Postgres;
    let current = format!("(SELECT e FROM {EPOCH})");
    let range = match part {
        ClaimPart::FromStart => ">=",
        ClaimPart::BeforeStart => "<",
    };
    let mut tests = vec![format!(
        "{FREE}.ctid {range} {}::text::tid",
        d.placeholder(1)
    )];
    tests.extend(candidate_tests(d, table, conditions, &current));
    let with = format!("WITH {} ", postgres_epoch_entry(table));
    format!(
        "{} = (SELECT {} FROM {} AS {FREE} WHERE {} LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED) {}",
        postgres_claim_head(table, &with, &claim_assignments(d, table, &current)),
        at(d, FREE, table.key_column()),
        table.name().quoted(d),
        tests.join(" AND "),
        postgres_claim_returning(table)
    )
}

/// The number of blocks the fenced table's main data takes on PostgreSQL, its name
/// bound as parameter 1: what a [`claim_one`]'s caller draws its start from.
pub fn table_blocks() -> &'static str {
    "SELECT pg_catalog.pg_relation_size($1::text::regclass) / \
     pg_catalog.current_setting('block_size')::bigint"
}

/// Claims up to parameter 1 free rows among the candidates in one statement: each
/// claimed row's generation is bumped, and its owner (parameter 2), expiry (`now +`
/// parameter 3 milliseconds) and epoch (the current one) set, exactly as
/// [`acquire`](super::acquire) does for one row. A row is a candidate when it satisfies
/// every one of `conditions` (each [`Test::Compare`] binds its value, from parameter 4
/// on, in order) and, with `keys` above 0, when its key is one of the
/// `keys` parameters that follow.
///
/// Rows that other transactions hold locked are skipped, not waited for: `FOR NO KEY
/// UPDATE SKIP LOCKED` on PostgreSQL, `READPAST` on SQL Server (with `UPDLOCK`, so that
/// the rows chosen stay locked until the claim commits); SQLite's single writer needs
/// neither. Returns key, new generation and epoch of each row claimed.
///
/// On PostgreSQL the rows chosen are an array the `UPDATE` finds by key (`= ANY`),
/// through the key's index whatever the limit: a prepared claim runs a generic plan,
/// which cannot know the limit and once took it for a tenth of the table, joining the
/// chosen rows with a walk of the whole key index up to them. A claim of any rows
/// (no key list) looks from a random block of the table on (a TID range scan), then
/// from its start up to that block: claims that all began at the table's start passed
/// every row the others held or had just taken, and updated rows of the same few
/// pages, one claimer after another.
pub fn claim(
    dialect: Dialect,
    table: &FencedTable,
    keys: usize,
    conditions: &[(&Identifier, Test)],
) -> String {
    let p = |n: usize| dialect.placeholder(n);
    let name = table.name().quoted(dialect);
    let key = table.key_column();
    // PostgreSQL reads the epoch once, in a `WITH` entry, where each of the claim's
    // four uses would evaluate the subquery (and its timeline stamp) again.
    let current = match dialect {
        Dialect::Postgres => format!("(SELECT e FROM {EPOCH})"),
        _ => epoch_subquery(dialect, table),
    };
    let mut candidate = candidate_tests(dialect, table, conditions, &current);
    if keys > 0 {
        let first = 4 + conditions
            .iter()
            .filter(|(_, test)| matches!(test, Test::Compare(_)))
            .count();
        let list: Vec<String> = (first..first + keys).map(p).collect();
        candidate.insert(
            candidate.len() - 1,
            format!("{} IN ({})", at(dialect, FREE, key), list.join(", ")),
        );
    }
    let candidate = candidate.join(" AND ");
    let set = claim_assignments(dialect, table, &current);
    let returned = [key, table.generation_column(), table.epoch_column()];
    let row_free = free(dialect, table, ROW, &current);
    match dialect {
        Dialect::Postgres => {
            let read_epoch = postgres_epoch_entry(table);
            let chosen = |extra: &str| {
                format!(
                    "SELECT {} AS k FROM {name} AS {FREE} WHERE {extra}{candidate} LIMIT {} \
                     FOR NO KEY UPDATE SKIP LOCKED",
                    at(dialect, FREE, key),
                    p(1)
                )
            };
            let head = |with: &str| postgres_claim_head(table, with, &set);
            let tail = postgres_claim_tail(table, &current);
            if keys > 0 {
                let with = format!("WITH {read_epoch} ");
                format!("{} = ANY (ARRAY({})) {tail}", head(&with), chosen(""))
            } else {
                // From a random block of the table on, then from its start up to there.
                let start = format!("(SELECT s FROM {START})");
                let from = format!("{FREE}.ctid >= {start} AND ");
                let before = format!("{FREE}.ctid < {start} AND ");
                let with = format!(
                    "WITH {read_epoch}, {START} AS MATERIALIZED (SELECT ('(' || floor(random() * \
                     (pg_catalog.pg_relation_size('{name}') / \
                     pg_catalog.current_setting('block_size')::bigint))::bigint || ',0)')::tid \
                     AS s) "
                );
                format!(
                    "{} = ANY (ARRAY(SELECT k FROM (SELECT k FROM ({}) AS fenced_from UNION ALL \
                     SELECT k FROM ({}) AS fenced_before) AS {CHOSEN} LIMIT {})) {tail}",
                    head(&with),
                    chosen(&from),
                    chosen(&before),
                    p(1)
                )
            }
        }
        Dialect::Sqlite => format!(
            "UPDATE {name} AS {ROW} SET {set} WHERE {} IN (SELECT {} FROM {name} AS {FREE} \
             WHERE {candidate} LIMIT {}) AND {row_free} RETURNING {}",
            at(dialect, ROW, key),
            at(dialect, FREE, key),
            p(1),
            returned.map(|c| q(dialect, c)).join(", ")
        ),
        // The rows chosen are locked (UPDLOCK) by the SELECT, which skips those other
        // transactions hold (READPAST), and kept in a table variable; the UPDATE checks
        // each is still free, and the read-back (in the transaction, by the claim's
        // own new owner) returns those it changed. No `OUTPUT`, as for `acquire`.
        Dialect::Mssql => {
            let key_type = dialect.key_column_type(table.key_type());
            let body = format!(
                "INSERT INTO @fenced_claimed (k) SELECT TOP ({}) {} FROM {name} AS {FREE} \
                 WITH (UPDLOCK, READPAST, ROWLOCK) WHERE {candidate}; \
                 UPDATE {ROW} SET {set} FROM {name} AS {ROW} \
                 JOIN @fenced_claimed AS fenced_claim ON {} = fenced_claim.k WHERE {row_free}; \
                 INSERT INTO @fenced_leases (k, g, e) SELECT {} FROM {name} AS {ROW} \
                 JOIN @fenced_claimed AS fenced_claim ON {} = fenced_claim.k \
                 WHERE {} = {};",
                p(1),
                at(dialect, FREE, key),
                at(dialect, ROW, key),
                returned.map(|c| at(dialect, ROW, c)).join(", "),
                at(dialect, ROW, key),
                at(dialect, ROW, table.owner_column()),
                p(2)
            );
            format!(
                "DECLARE @fenced_claimed TABLE (k {key_type} PRIMARY KEY); \
                 DECLARE @fenced_leases TABLE (k {key_type}, g bigint, e bigint); \
                 {} SELECT k, g, e FROM @fenced_leases",
                mssql::in_transaction(&body)
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claim::Comparison;
    use crate::table::{ColumnType, KeyType};

    fn table() -> FencedTable {
        FencedTable::builder()
            .table("app.Job")
            .key_type(KeyType::BigInt)
            .column("Queue", ColumnType::Text)
            .build()
            .unwrap()
    }

    fn queue() -> Identifier {
        Identifier::new("Queue").unwrap()
    }

    renders! {
        postgres_renew_batch: renew_batch(Dialect::Postgres, &table(), 2) =>
            r#"WITH fenced_batch (k, g, o, ttl) AS (VALUES ($1::bigint, $2::bigint, $3::uuid, $4::bigint), ($5::bigint, $6::bigint, $7::uuid, $8::bigint)), fenced_unlocked AS (SELECT fenced_row."ReportId" AS k FROM "app"."Job" AS fenced_row WHERE fenced_row."ReportId" IN (SELECT k FROM fenced_batch) FOR NO KEY UPDATE SKIP LOCKED), fenced_renewed AS (UPDATE "app"."Job" AS fenced_row SET "LeaseUntilUtc" = clock_timestamp() + fenced_batch.ttl * interval '1 millisecond' FROM fenced_batch WHERE fenced_row."ReportId" = fenced_batch.k AND fenced_row."Generation" = fenced_batch.g AND fenced_row."LeaseOwner" = fenced_batch.o AND fenced_row."LeaseUntilUtc" > clock_timestamp() AND fenced_row."LeaseEpoch" = (SELECT "Epoch" * 1000000 + ('x' || substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint FROM "app"."FencedEpoch" WHERE "Id" = 1) AND fenced_row."ReportId" IN (SELECT k FROM fenced_unlocked) RETURNING fenced_row."ReportId", fenced_row."Generation", fenced_row."LeaseOwner") SELECT *, 1 FROM fenced_renewed UNION ALL SELECT fenced_batch.k, fenced_batch.g, fenced_batch.o, 0 FROM fenced_batch WHERE fenced_batch.k NOT IN (SELECT k FROM fenced_unlocked) AND EXISTS (SELECT 1 FROM "app"."Job" AS fenced_locked WHERE fenced_locked."ReportId" = fenced_batch.k)"#,
        sqlite_renew_batch: renew_batch(Dialect::Sqlite, &table(), 2) =>
            r#"WITH fenced_batch (k, g, o, ttl) AS (VALUES (?1, ?2, ?3, ?4), (?5, ?6, ?7, ?8)) UPDATE "app"."Job" AS fenced_row SET "LeaseUntilUtc" = CAST(unixepoch('subsec') * 1000 AS INTEGER) + fenced_batch.ttl FROM fenced_batch WHERE fenced_row."ReportId" = fenced_batch.k AND fenced_row."Generation" = fenced_batch.g AND fenced_row."LeaseOwner" = fenced_batch.o AND fenced_row."LeaseUntilUtc" > CAST(unixepoch('subsec') * 1000 AS INTEGER) AND fenced_row."LeaseEpoch" = (SELECT "Epoch" FROM "app"."FencedEpoch" WHERE "Id" = 1) RETURNING "ReportId", "Generation", "LeaseOwner""#,
        mssql_renew_batch: renew_batch(Dialect::Mssql, &table(), 2) =>
            "DECLARE @fenced_batch TABLE (k bigint, g bigint, o uniqueidentifier, ttl bigint); DECLARE @fenced_unlocked TABLE (k bigint); DECLARE @fenced_renewed TABLE (k bigint, g bigint, o uniqueidentifier, r int); DECLARE @fenced_outer int = @@TRANCOUNT; BEGIN TRY IF @fenced_outer = 0 BEGIN TRANSACTION ELSE SAVE TRANSACTION fenced_step; INSERT INTO @fenced_batch (k, g, o, ttl) VALUES (@P1, @P2, @P3, @P4), (@P5, @P6, @P7, @P8); INSERT INTO @fenced_unlocked (k) SELECT fenced_row.[ReportId] FROM [app].[Job] AS fenced_row WITH (UPDLOCK, READPAST, ROWLOCK) WHERE fenced_row.[ReportId] IN (SELECT k FROM @fenced_batch); UPDATE fenced_row SET [LeaseUntilUtc] = DATEADD(millisecond, CAST(fenced_batch.ttl AS int), SYSUTCDATETIME()) FROM [app].[Job] AS fenced_row JOIN @fenced_batch AS fenced_batch ON fenced_row.[ReportId] = fenced_batch.k AND fenced_row.[Generation] = fenced_batch.g AND fenced_row.[LeaseOwner] = fenced_batch.o WHERE fenced_row.[LeaseUntilUtc] > SYSUTCDATETIME() AND fenced_row.[LeaseEpoch] = (SELECT [Epoch] FROM [app].[FencedEpoch] WHERE [Id] = 1) AND fenced_row.[ReportId] IN (SELECT k FROM @fenced_unlocked); INSERT INTO @fenced_renewed (k, g, o, r) SELECT fenced_row.[ReportId], fenced_row.[Generation], fenced_row.[LeaseOwner], 1 FROM [app].[Job] AS fenced_row JOIN @fenced_batch AS fenced_batch ON fenced_row.[ReportId] = fenced_batch.k AND fenced_row.[Generation] = fenced_batch.g AND fenced_row.[LeaseOwner] = fenced_batch.o WHERE fenced_row.[LeaseUntilUtc] > SYSUTCDATETIME() AND fenced_row.[LeaseEpoch] = (SELECT [Epoch] FROM [app].[FencedEpoch] WHERE [Id] = 1) AND fenced_row.[ReportId] IN (SELECT k FROM @fenced_unlocked); INSERT INTO @fenced_renewed (k, g, o, r) SELECT fenced_batch.k, fenced_batch.g, fenced_batch.o, 0 FROM @fenced_batch AS fenced_batch WHERE fenced_batch.k NOT IN (SELECT k FROM @fenced_unlocked) AND EXISTS (SELECT 1 FROM [app].[Job] AS fenced_locked WITH (READUNCOMMITTED) WHERE fenced_locked.[ReportId] = fenced_batch.k); IF @fenced_outer = 0 COMMIT TRANSACTION; END TRY BEGIN CATCH IF @fenced_outer = 0 BEGIN IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION; THROW; END; IF XACT_STATE() = 1 ROLLBACK TRANSACTION fenced_step; DECLARE @fenced_error int = 1000000 + ERROR_NUMBER(), @fenced_message nvarchar(2048) = ERROR_MESSAGE(); THROW @fenced_error, @fenced_message, 1; END CATCH; SELECT k, g, o, r FROM @fenced_renewed",
        postgres_claim_any: claim(Dialect::Postgres, &table(), 0, &[]) =>
            r#"WITH fenced_epoch AS MATERIALIZED (SELECT (SELECT "Epoch" * 1000000 + ('x' || substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint FROM "app"."FencedEpoch" WHERE "Id" = 1) AS e), fenced_start AS MATERIALIZED (SELECT ('(' || floor(random() * (pg_catalog.pg_relation_size('"app"."Job"') / pg_catalog.current_setting('block_size')::bigint))::bigint || ',0)')::tid AS s) UPDATE "app"."Job" AS fenced_row SET "Generation" = fenced_row."Generation" + 1, "LeaseOwner" = $2, "LeaseUntilUtc" = clock_timestamp() + $3::bigint * interval '1 millisecond', "LeaseEpoch" = (SELECT e FROM fenced_epoch) WHERE fenced_row."ReportId" = ANY (ARRAY(SELECT k FROM (SELECT k FROM (SELECT fenced_free."ReportId" AS k FROM "app"."Job" AS fenced_free WHERE fenced_free.ctid >= (SELECT s FROM fenced_start) AND (fenced_free."LeaseUntilUtc" IS NULL OR fenced_free."LeaseUntilUtc" <= clock_timestamp() OR fenced_free."LeaseEpoch" <> (SELECT e FROM fenced_epoch)) LIMIT $1 FOR NO KEY UPDATE SKIP LOCKED) AS fenced_from UNION ALL SELECT k FROM (SELECT fenced_free."ReportId" AS k FROM "app"."Job" AS fenced_free WHERE fenced_free.ctid < (SELECT s FROM fenced_start) AND (fenced_free."LeaseUntilUtc" IS NULL OR fenced_free."LeaseUntilUtc" <= clock_timestamp() OR fenced_free."LeaseEpoch" <> (SELECT e FROM fenced_epoch)) LIMIT $1 FOR NO KEY UPDATE SKIP LOCKED) AS fenced_before) AS fenced_chosen LIMIT $1)) AND (fenced_row."LeaseUntilUtc" IS NULL OR fenced_row."LeaseUntilUtc" <= clock_timestamp() OR fenced_row."LeaseEpoch" <> (SELECT e FROM fenced_epoch)) RETURNING fenced_row."ReportId", fenced_row."Generation", fenced_row."LeaseEpoch""#,
        postgres_claim_filtered_keys: claim(Dialect::Postgres, &table(), 2, &[(&queue(), Test::Compare(Comparison::Eq)), (&queue(), Test::IsNotNull)]) =>
            r#"WITH fenced_epoch AS MATERIALIZED (SELECT (SELECT "Epoch" * 1000000 + ('x' || substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint FROM "app"."FencedEpoch" WHERE "Id" = 1) AS e) UPDATE "app"."Job" AS fenced_row SET "Generation" = fenced_row."Generation" + 1, "LeaseOwner" = $2, "LeaseUntilUtc" = clock_timestamp() + $3::bigint * interval '1 millisecond', "LeaseEpoch" = (SELECT e FROM fenced_epoch) WHERE fenced_row."ReportId" = ANY (ARRAY(SELECT fenced_free."ReportId" AS k FROM "app"."Job" AS fenced_free WHERE fenced_free."Queue" = $4 AND fenced_free."Queue" IS NOT NULL AND fenced_free."ReportId" IN ($5, $6) AND (fenced_free."LeaseUntilUtc" IS NULL OR fenced_free."LeaseUntilUtc" <= clock_timestamp() OR fenced_free."LeaseEpoch" <> (SELECT e FROM fenced_epoch)) LIMIT $1 FOR NO KEY UPDATE SKIP LOCKED)) AND (fenced_row."LeaseUntilUtc" IS NULL OR fenced_row."LeaseUntilUtc" <= clock_timestamp() OR fenced_row."LeaseEpoch" <> (SELECT e FROM fenced_epoch)) RETURNING fenced_row."ReportId", fenced_row."Generation", fenced_row."LeaseEpoch""#,
        postgres_claim_one_from: claim_one(&table(), ClaimPart::FromStart, &[(&queue(), Test::Compare(Comparison::Eq))]) =>
            r#"WITH fenced_epoch AS MATERIALIZED (SELECT (SELECT "Epoch" * 1000000 + ('x' || substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint FROM "app"."FencedEpoch" WHERE "Id" = 1) AS e) UPDATE "app"."Job" AS fenced_row SET "Generation" = fenced_row."Generation" + 1, "LeaseOwner" = $2, "LeaseUntilUtc" = clock_timestamp() + $3::bigint * interval '1 millisecond', "LeaseEpoch" = (SELECT e FROM fenced_epoch) WHERE fenced_row."ReportId" = (SELECT fenced_free."ReportId" FROM "app"."Job" AS fenced_free WHERE fenced_free.ctid >= $1::text::tid AND fenced_free."Queue" = $4 AND (fenced_free."LeaseUntilUtc" IS NULL OR fenced_free."LeaseUntilUtc" <= clock_timestamp() OR fenced_free."LeaseEpoch" <> (SELECT e FROM fenced_epoch)) LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED) RETURNING fenced_row."ReportId", fenced_row."Generation", fenced_row."LeaseEpoch""#,
        postgres_claim_one_before: claim_one(&table(), ClaimPart::BeforeStart, &[]) =>
            r#"WITH fenced_epoch AS MATERIALIZED (SELECT (SELECT "Epoch" * 1000000 + ('x' || substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint FROM "app"."FencedEpoch" WHERE "Id" = 1) AS e) UPDATE "app"."Job" AS fenced_row SET "Generation" = fenced_row."Generation" + 1, "LeaseOwner" = $2, "LeaseUntilUtc" = clock_timestamp() + $3::bigint * interval '1 millisecond', "LeaseEpoch" = (SELECT e FROM fenced_epoch) WHERE fenced_row."ReportId" = (SELECT fenced_free."ReportId" FROM "app"."Job" AS fenced_free WHERE fenced_free.ctid < $1::text::tid AND (fenced_free."LeaseUntilUtc" IS NULL OR fenced_free."LeaseUntilUtc" <= clock_timestamp() OR fenced_free."LeaseEpoch" <> (SELECT e FROM fenced_epoch)) LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED) RETURNING fenced_row."ReportId", fenced_row."Generation", fenced_row."LeaseEpoch""#,
        sqlite_claim: claim(Dialect::Sqlite, &table(), 1, &[(&queue(), Test::Compare(Comparison::Ne))]) =>
            r#"UPDATE "app"."Job" AS fenced_row SET "Generation" = fenced_row."Generation" + 1, "LeaseOwner" = ?2, "LeaseUntilUtc" = CAST(unixepoch('subsec') * 1000 AS INTEGER) + ?3, "LeaseEpoch" = (SELECT "Epoch" FROM "app"."FencedEpoch" WHERE "Id" = 1) WHERE fenced_row."ReportId" IN (SELECT fenced_free."ReportId" FROM "app"."Job" AS fenced_free WHERE fenced_free."Queue" <> ?4 AND fenced_free."ReportId" IN (?5) AND (fenced_free."LeaseUntilUtc" IS NULL OR fenced_free."LeaseUntilUtc" <= CAST(unixepoch('subsec') * 1000 AS INTEGER) OR fenced_free."LeaseEpoch" <> (SELECT "Epoch" FROM "app"."FencedEpoch" WHERE "Id" = 1)) LIMIT ?1) AND (fenced_row."LeaseUntilUtc" IS NULL OR fenced_row."LeaseUntilUtc" <= CAST(unixepoch('subsec') * 1000 AS INTEGER) OR fenced_row."LeaseEpoch" <> (SELECT "Epoch" FROM "app"."FencedEpoch" WHERE "Id" = 1)) RETURNING "ReportId", "Generation", "LeaseEpoch""#,
        mssql_claim: claim(Dialect::Mssql, &table(), 1, &[(&queue(), Test::IsNull)]) =>
            "DECLARE @fenced_claimed TABLE (k bigint PRIMARY KEY); DECLARE @fenced_leases TABLE (k bigint, g bigint, e bigint); DECLARE @fenced_outer int = @@TRANCOUNT; BEGIN TRY IF @fenced_outer = 0 BEGIN TRANSACTION ELSE SAVE TRANSACTION fenced_step; INSERT INTO @fenced_claimed (k) SELECT TOP (@P1) fenced_free.[ReportId] FROM [app].[Job] AS fenced_free WITH (UPDLOCK, READPAST, ROWLOCK) WHERE fenced_free.[Queue] IS NULL AND fenced_free.[ReportId] IN (@P4) AND (fenced_free.[LeaseUntilUtc] IS NULL OR fenced_free.[LeaseUntilUtc] <= SYSUTCDATETIME() OR fenced_free.[LeaseEpoch] <> (SELECT [Epoch] FROM [app].[FencedEpoch] WHERE [Id] = 1)); UPDATE fenced_row SET [Generation] = fenced_row.[Generation] + 1, [LeaseOwner] = @P2, [LeaseUntilUtc] = DATEADD(millisecond, CAST(@P3 AS int), SYSUTCDATETIME()), [LeaseEpoch] = (SELECT [Epoch] FROM [app].[FencedEpoch] WHERE [Id] = 1) FROM [app].[Job] AS fenced_row JOIN @fenced_claimed AS fenced_claim ON fenced_row.[ReportId] = fenced_claim.k WHERE (fenced_row.[LeaseUntilUtc] IS NULL OR fenced_row.[LeaseUntilUtc] <= SYSUTCDATETIME() OR fenced_row.[LeaseEpoch] <> (SELECT [Epoch] FROM [app].[FencedEpoch] WHERE [Id] = 1)); INSERT INTO @fenced_leases (k, g, e) SELECT fenced_row.[ReportId], fenced_row.[Generation], fenced_row.[LeaseEpoch] FROM [app].[Job] AS fenced_row JOIN @fenced_claimed AS fenced_claim ON fenced_row.[ReportId] = fenced_claim.k WHERE fenced_row.[LeaseOwner] = @P2; IF @fenced_outer = 0 COMMIT TRANSACTION; END TRY BEGIN CATCH IF @fenced_outer = 0 BEGIN IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION; THROW; END; IF XACT_STATE() = 1 ROLLBACK TRANSACTION fenced_step; DECLARE @fenced_error int = 1000000 + ERROR_NUMBER(), @fenced_message nvarchar(2048) = ERROR_MESSAGE(); THROW @fenced_error, @fenced_message, 1; END CATCH; SELECT k, g, e FROM @fenced_leases",
    }

    #[test]
    fn every_batch_statement_is_on_the_database_clock_and_never_now() {
        for d in [Dialect::Postgres, Dialect::Sqlite, Dialect::Mssql] {
            for sql in [
                renew_batch(d, &table(), 3),
                claim(d, &table(), 3, &[(&queue(), Test::Compare(Comparison::Ge))]),
            ] {
                assert!(!sql.contains("now()"), "{sql}");
                assert!(sql.contains(d.clock()), "{sql}");
                assert!(!sql.contains("OUTPUT"), "{sql}");
            }
        }
    }
}
