//! PostgreSQL text: `clock_timestamp()`, `timestamptz` expiry, `$n` placeholders.

use crate::table::ColumnType;

/// The database's clock: the statement's current time, not the transaction's start.
pub(crate) const CLOCK: &str = "clock_timestamp()";

/// The server's timeline, as a `bigint`: the first eight hexadecimal digits of the name
/// of the WAL file it writes now. `pg_walfile_name` names the file by the timeline the
/// server inserts WAL on, whatever the position given; both functions are executable by
/// every role, and read server memory only (`pg_control_checkpoint()`, the other
/// source, reads the control file and still shows the old timeline after a promotion
/// until the next checkpoint ends). Both raise an error on a standby. Schema-qualified,
/// so that no function of the same name earlier on the `search_path` can stand in.
const TIMELINE: &str = "('x' || substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint";

/// How many timelines one epoch's stamps tell apart: a stamp is `epoch * TIMELINES +
/// timeline`. A decimal factor keeps the stamp readable (epoch 3 on timeline 2 is
/// 3000002); PostgreSQL numbers timelines from 1, one more per promotion or archive
/// recovery, so a cluster stays below it for a million of them.
pub(crate) const TIMELINES: i64 = 1_000_000;

/// The stamp of the epoch column `epoch` of the epoch table: the epoch and the server's
/// timeline in one `bigint`.
pub(crate) fn stamp(epoch: &str) -> String {
    format!("{epoch} * {TIMELINES} + {TIMELINE}")
}

pub(crate) fn expiry_after(ttl: usize) -> String {
    format!("{CLOCK} + ${ttl}::bigint * interval '1 millisecond'")
}

pub(crate) fn column_type(t: ColumnType) -> &'static str {
    match t {
        ColumnType::Bool => "boolean",
        ColumnType::BigInt => "bigint",
        ColumnType::Double => "double precision",
        ColumnType::Text => "text",
        ColumnType::Bytes => "bytea",
        ColumnType::Uuid => "uuid",
    }
}

#[cfg(test)]
mod tests {
    use crate::dialect::fixtures::{self, payload};
    use crate::dialect::{self, Dialect, renders};
    use crate::table::{FencedTable, KeyType};

    const D: Dialect = Dialect::Postgres;

    fn table() -> FencedTable {
        fixtures::table("app.ReportPublication")
    }

    fn article() -> FencedTable {
        fixtures::article("app.ReportPublication")
    }

    renders! {
        placeholder: D.placeholder(7) => "$7",
        clock_is_not_now: D.clock() => "clock_timestamp()",
        fence: dialect::fence_predicate(D, &table(), 3) =>
            r#""ReportId" = $3 AND "Generation" = $4 AND "LeaseOwner" = $5 AND "LeaseUntilUtc" > clock_timestamp() AND "LeaseEpoch" = (SELECT "Epoch" * 1000000 + ('x' || substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint FROM "app"."FencedEpoch" WHERE "Id" = 1)"#,
        publish_once_predicate: dialect::publish_once_predicate(D, &table(), 3) =>
            r#""PublishedGeneration" < $4"#,
        publish_once_assignment: dialect::publish_once_assignment(D, &table(), 3) =>
            r#""PublishedGeneration" = $4"#,
        create_schema: dialect::create_schema(D, &table()) =>
            r#"CREATE TABLE IF NOT EXISTS "app"."ReportPublication" ("ReportId" uuid NOT NULL PRIMARY KEY, "Generation" bigint NOT NULL DEFAULT 0, "LeaseOwner" uuid NULL, "LeaseUntilUtc" timestamptz NULL, "PublishedGeneration" bigint NOT NULL DEFAULT 0, "LeaseEpoch" bigint NOT NULL DEFAULT 0, "Payload" text NULL)"#,
        create_schema_text_key: dialect::create_schema(D, &FencedTable::builder().key_type(KeyType::Text).build().unwrap()) =>
            r#"CREATE TABLE IF NOT EXISTS "ReportPublication" ("ReportId" text NOT NULL PRIMARY KEY, "Generation" bigint NOT NULL DEFAULT 0, "LeaseOwner" uuid NULL, "LeaseUntilUtc" timestamptz NULL, "PublishedGeneration" bigint NOT NULL DEFAULT 0, "LeaseEpoch" bigint NOT NULL DEFAULT 0)"#,
        provision: dialect::provision(D, &table()) =>
            r#"INSERT INTO "app"."ReportPublication" ("ReportId", "Generation", "PublishedGeneration") VALUES ($1, 0, 0) ON CONFLICT DO NOTHING"#,
        acquire: dialect::acquire(D, &table()) =>
            r#"UPDATE "app"."ReportPublication" SET "Generation" = "Generation" + 1, "LeaseOwner" = $2, "LeaseUntilUtc" = clock_timestamp() + $3::bigint * interval '1 millisecond', "LeaseEpoch" = (SELECT "Epoch" * 1000000 + ('x' || substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint FROM "app"."FencedEpoch" WHERE "Id" = 1) WHERE "ReportId" = $1 AND ("LeaseUntilUtc" IS NULL OR "LeaseUntilUtc" <= clock_timestamp() OR "LeaseEpoch" <> (SELECT "Epoch" * 1000000 + ('x' || substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint FROM "app"."FencedEpoch" WHERE "Id" = 1)) RETURNING "Generation", "LeaseEpoch""#,
        renew: dialect::renew(D, &table()) =>
            r#"UPDATE "app"."ReportPublication" SET "LeaseUntilUtc" = clock_timestamp() + $4::bigint * interval '1 millisecond' WHERE "ReportId" = $1 AND "Generation" = $2 AND "LeaseOwner" = $3 AND "LeaseUntilUtc" > clock_timestamp() AND "LeaseEpoch" = (SELECT "Epoch" * 1000000 + ('x' || substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint FROM "app"."FencedEpoch" WHERE "Id" = 1)"#,
        lock: dialect::lock(D, &table()) =>
            r#"SELECT 1 FROM "app"."ReportPublication" WHERE "ReportId" = $1 AND "Generation" = $2 AND "LeaseOwner" = $3 AND "LeaseUntilUtc" > clock_timestamp() AND "LeaseEpoch" = (SELECT "Epoch" * 1000000 + ('x' || substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint FROM "app"."FencedEpoch" WHERE "Id" = 1 FOR SHARE) FOR NO KEY UPDATE"#,
        lock_after_begin_is_the_lock: dialect::lock_after_begin(D, &table()) == dialect::lock(D, &table()) => true,
        release: dialect::release(D, &table()) =>
            r#"UPDATE "app"."ReportPublication" SET "LeaseOwner" = NULL, "LeaseUntilUtc" = NULL WHERE "ReportId" = $1 AND "Generation" = $2 AND "LeaseOwner" = $3"#,
        update: dialect::update(D, &table(), &[&payload()]) =>
            r#"UPDATE "app"."ReportPublication" SET "Payload" = $1 WHERE "ReportId" = $2 AND "Generation" = $3 AND "LeaseOwner" = $4 AND "LeaseUntilUtc" > clock_timestamp() AND "LeaseEpoch" = (SELECT "Epoch" * 1000000 + ('x' || substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint FROM "app"."FencedEpoch" WHERE "Id" = 1)"#,
        // A deferred transaction's lock: the write holds the epoch's row shared, as the
        // check-and-lock does.
        update_locking: dialect::update_locking(D, &table(), &[&payload()]) =>
            r#"UPDATE "app"."ReportPublication" SET "Payload" = $1 WHERE "ReportId" = $2 AND "Generation" = $3 AND "LeaseOwner" = $4 AND "LeaseUntilUtc" > clock_timestamp() AND "LeaseEpoch" = (SELECT "Epoch" * 1000000 + ('x' || substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint FROM "app"."FencedEpoch" WHERE "Id" = 1 FOR SHARE)"#,
        publish_locking: dialect::publish_locking(D, &table(), &[&payload()], false) =>
            r#"UPDATE "app"."ReportPublication" SET "Payload" = $1, "PublishedGeneration" = $3 WHERE "ReportId" = $2 AND "Generation" = $3 AND "LeaseOwner" = $4 AND "LeaseUntilUtc" > clock_timestamp() AND "LeaseEpoch" = (SELECT "Epoch" * 1000000 + ('x' || substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint FROM "app"."FencedEpoch" WHERE "Id" = 1 FOR SHARE) AND "PublishedGeneration" < $3"#,
        publish: dialect::publish(D, &table(), &[&payload()], false) =>
            r#"UPDATE "app"."ReportPublication" SET "Payload" = $1, "PublishedGeneration" = $3 WHERE "ReportId" = $2 AND "Generation" = $3 AND "LeaseOwner" = $4 AND "LeaseUntilUtc" > clock_timestamp() AND "LeaseEpoch" = (SELECT "Epoch" * 1000000 + ('x' || substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint FROM "app"."FencedEpoch" WHERE "Id" = 1) AND "PublishedGeneration" < $3"#,
        publish_and_release: dialect::publish(D, &table(), &[&payload()], true) =>
            r#"UPDATE "app"."ReportPublication" SET "Payload" = $1, "PublishedGeneration" = $3, "LeaseOwner" = NULL, "LeaseUntilUtc" = NULL WHERE "ReportId" = $2 AND "Generation" = $3 AND "LeaseOwner" = $4 AND "LeaseUntilUtc" > clock_timestamp() AND "LeaseEpoch" = (SELECT "Epoch" * 1000000 + ('x' || substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint FROM "app"."FencedEpoch" WHERE "Id" = 1) AND "PublishedGeneration" < $3"#,
        publish_without_columns: dialect::publish(D, &table(), &[], false) =>
            r#"UPDATE "app"."ReportPublication" SET "PublishedGeneration" = $2 WHERE "ReportId" = $1 AND "Generation" = $2 AND "LeaseOwner" = $3 AND "LeaseUntilUtc" > clock_timestamp() AND "LeaseEpoch" = (SELECT "Epoch" * 1000000 + ('x' || substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint FROM "app"."FencedEpoch" WHERE "Id" = 1) AND "PublishedGeneration" < $2"#,
        publish_sets_published_at: dialect::publish(D, &article(), &[&payload()], false) =>
            r#"UPDATE "app"."ReportPublication" SET "Payload" = $1, "PublishedGeneration" = $3, "PublishedAtUtc" = clock_timestamp() WHERE "ReportId" = $2 AND "Generation" = $3 AND "LeaseOwner" = $4 AND "LeaseUntilUtc" > clock_timestamp() AND "LeaseEpoch" = (SELECT "Epoch" * 1000000 + ('x' || substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint FROM "app"."FencedEpoch" WHERE "Id" = 1) AND "PublishedGeneration" < $3"#,
        create_schema_with_published_at: dialect::create_schema(D, &article()).contains(r#""PublishedGeneration" bigint NOT NULL DEFAULT 0, "LeaseEpoch" bigint NOT NULL DEFAULT 0, "PublishedAtUtc" timestamptz NULL, "Payload" text NULL)"#) => true,
    }

    fn unstamped() -> FencedTable {
        FencedTable::builder()
            .table("app.ReportPublication")
            .stamp_timeline(false)
            .build()
            .unwrap()
    }

    renders! {
        epoch_with_the_timeline: dialect::epoch_subquery(D, &table()) =>
            r#"(SELECT "Epoch" * 1000000 + ('x' || substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint FROM "app"."FencedEpoch" WHERE "Id" = 1)"#,
        epoch_without_the_timeline: dialect::epoch_subquery(D, &unstamped()) =>
            r#"(SELECT "Epoch" FROM "app"."FencedEpoch" WHERE "Id" = 1)"#,
        fence_without_the_timeline: dialect::fence_predicate(D, &unstamped(), 1) =>
            r#""ReportId" = $1 AND "Generation" = $2 AND "LeaseOwner" = $3 AND "LeaseUntilUtc" > clock_timestamp() AND "LeaseEpoch" = (SELECT "Epoch" FROM "app"."FencedEpoch" WHERE "Id" = 1)"#,
        acquire_without_the_timeline: dialect::acquire(D, &unstamped()) =>
            r#"UPDATE "app"."ReportPublication" SET "Generation" = "Generation" + 1, "LeaseOwner" = $2, "LeaseUntilUtc" = clock_timestamp() + $3::bigint * interval '1 millisecond', "LeaseEpoch" = (SELECT "Epoch" FROM "app"."FencedEpoch" WHERE "Id" = 1) WHERE "ReportId" = $1 AND ("LeaseUntilUtc" IS NULL OR "LeaseUntilUtc" <= clock_timestamp() OR "LeaseEpoch" <> (SELECT "Epoch" FROM "app"."FencedEpoch" WHERE "Id" = 1)) RETURNING "Generation", "LeaseEpoch""#,
        // The operator's epoch is the table's value, without the timeline.
        current_epoch_is_the_tables: dialect::current_epoch(D, &table()) =>
            r#"SELECT "Epoch" FROM "app"."FencedEpoch" WHERE "Id" = 1"#,
        stamped: dialect::stamps_timeline(D, &table()) => true,
        not_stamped: dialect::stamps_timeline(D, &unstamped()) => false,
        split_a_stamp: dialect::split_stamp(D, &table(), 1_781_234_567_890_000_003) => (1_781_234_567_890, Some(3)),
        split_the_first_stamp: dialect::split_stamp(D, &table(), 1_000_001) => (1, Some(1)),
        split_an_unstamped_epoch: dialect::split_stamp(D, &unstamped(), 1_000_001) => (1_000_001, None),
        max_stamped_epoch: dialect::max_epoch(D, &table()) => 9_223_372_036_853,
        max_unstamped_epoch: dialect::max_epoch(D, &unstamped()) => i64::MAX,
        // Only PostgreSQL has a timeline.
        sqlite_has_no_timeline: dialect::stamps_timeline(Dialect::Sqlite, &table()) => false,
        mssql_has_no_timeline: dialect::max_epoch(Dialect::Mssql, &table()) => i64::MAX,
    }

    #[test]
    fn the_greatest_stamp_fits_a_bigint() {
        let max = dialect::max_epoch(D, &table());
        let timeline = super::TIMELINES - 1;
        assert!(
            max.checked_mul(super::TIMELINES)
                .and_then(|s| s.checked_add(timeline))
                .is_some()
        );
        assert!(
            (max + 1)
                .checked_mul(super::TIMELINES)
                .and_then(|s| s.checked_add(timeline))
                .is_none()
        );
        // Milliseconds since 1970, which an epoch advance may take, stay below it until 2262.
        let year_2262_ms = 9_200_000_000_000_i64;
        assert!(year_2262_ms < max);
    }

    #[test]
    fn no_statement_uses_now() {
        let t = table();
        for sql in [
            dialect::acquire(D, &t),
            dialect::renew(D, &t),
            dialect::update(D, &t, &[&payload()]),
            dialect::publish(D, &t, &[&payload()], true),
        ] {
            assert!(!sql.contains("now()"), "{sql}");
        }
    }

    renders! {
        create_epoch_table: dialect::create_epoch_table(D, &table()) =>
            r#"CREATE TABLE IF NOT EXISTS "app"."FencedEpoch" ("Id" int NOT NULL PRIMARY KEY CHECK ("Id" = 1), "Epoch" bigint NOT NULL)"#,
        seed_epoch: dialect::seed_epoch(D, &table()) =>
            r#"INSERT INTO "app"."FencedEpoch" ("Id", "Epoch") VALUES (1, 1) ON CONFLICT DO NOTHING"#,
        create_operations_table: dialect::create_operations_table(D, &table()) =>
            r#"CREATE TABLE IF NOT EXISTS "app"."FencedOperation" ("OperationId" uuid NOT NULL PRIMARY KEY, "Key" uuid NOT NULL, "Generation" bigint NOT NULL, "RecordedAt" timestamptz NOT NULL)"#,
        advance_epoch: dialect::advance_epoch(D, &table()) =>
            r#"UPDATE "app"."FencedEpoch" SET "Epoch" = GREATEST("Epoch" + 1, CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS bigint), $1::bigint) WHERE "Id" = 1 RETURNING "Epoch""#,
        current_epoch: dialect::current_epoch(D, &table()) =>
            r#"SELECT "Epoch" FROM "app"."FencedEpoch" WHERE "Id" = 1"#,
        resolve_operation: dialect::resolve_operation(D, &table()) =>
            r#"SELECT "Generation" FROM "app"."FencedOperation" WHERE "OperationId" = $1"#,
        record_operation: dialect::record_operation(D, &table()) =>
            r#"INSERT INTO "app"."FencedOperation" ("OperationId", "Key", "Generation", "RecordedAt") VALUES ($1, $2, $3, clock_timestamp())"#,
        update_recorded: dialect::update_recorded(D, &table(), &[&payload()]) =>
            r#"WITH w AS (UPDATE "app"."ReportPublication" SET "Payload" = $1 WHERE "ReportId" = $2 AND "Generation" = $3 AND "LeaseOwner" = $4 AND "LeaseUntilUtc" > clock_timestamp() AND "LeaseEpoch" = (SELECT "Epoch" * 1000000 + ('x' || substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint FROM "app"."FencedEpoch" WHERE "Id" = 1) AND NOT EXISTS (SELECT 1 FROM "app"."FencedOperation" WHERE "OperationId" = $5) RETURNING "ReportId", "Generation") INSERT INTO "app"."FencedOperation" ("OperationId", "Key", "Generation", "RecordedAt") SELECT $5::uuid, w."ReportId", w."Generation", clock_timestamp() FROM w"#,
        publish_recorded_and_release: dialect::publish_recorded(D, &table(), &[&payload()], true) =>
            r#"WITH w AS (UPDATE "app"."ReportPublication" SET "Payload" = $1, "PublishedGeneration" = $3, "LeaseOwner" = NULL, "LeaseUntilUtc" = NULL WHERE "ReportId" = $2 AND "Generation" = $3 AND "LeaseOwner" = $4 AND "LeaseUntilUtc" > clock_timestamp() AND "LeaseEpoch" = (SELECT "Epoch" * 1000000 + ('x' || substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint FROM "app"."FencedEpoch" WHERE "Id" = 1) AND "PublishedGeneration" < $3 AND NOT EXISTS (SELECT 1 FROM "app"."FencedOperation" WHERE "OperationId" = $5) RETURNING "ReportId", "Generation") INSERT INTO "app"."FencedOperation" ("OperationId", "Key", "Generation", "RecordedAt") SELECT $5::uuid, w."ReportId", w."Generation", clock_timestamp() FROM w"#,
    }
}
