//! SQLite text: expiry as `INTEGER` milliseconds since the Unix epoch, `?n` placeholders.

use crate::table::ColumnType;

/// The database's clock in integer milliseconds since the Unix epoch.
pub(crate) const CLOCK: &str = "CAST(unixepoch('subsec') * 1000 AS INTEGER)";

pub(crate) fn expiry_after(ttl: usize) -> String {
    format!("{CLOCK} + ?{ttl}")
}

pub(crate) fn column_type(t: ColumnType) -> &'static str {
    match t {
        ColumnType::Bool | ColumnType::BigInt => "INTEGER",
        ColumnType::Double => "REAL",
        ColumnType::Text | ColumnType::Uuid => "TEXT",
        ColumnType::Bytes => "BLOB",
    }
}

#[cfg(test)]
mod tests {
    use crate::dialect::fixtures::{self, payload};
    use crate::dialect::{self, Dialect, renders};
    use crate::table::{FencedTable, KeyType};

    const D: Dialect = Dialect::Sqlite;

    fn table() -> FencedTable {
        fixtures::table("ReportPublication")
    }

    fn article() -> FencedTable {
        fixtures::article("ReportPublication")
    }

    renders! {
        placeholder: D.placeholder(7) => "?7",
        clock: D.clock() => "CAST(unixepoch('subsec') * 1000 AS INTEGER)",
        fence: dialect::fence_predicate(D, &table(), 3) =>
            r#""ReportId" = ?3 AND "Generation" = ?4 AND "LeaseOwner" = ?5 AND "LeaseUntilUtc" > CAST(unixepoch('subsec') * 1000 AS INTEGER) AND "LeaseEpoch" = (SELECT "Epoch" FROM "FencedEpoch" WHERE "Id" = 1)"#,
        publish_once_predicate: dialect::publish_once_predicate(D, &table(), 3) =>
            r#""PublishedGeneration" < ?4"#,
        publish_once_assignment: dialect::publish_once_assignment(D, &table(), 3) =>
            r#""PublishedGeneration" = ?4"#,
        create_schema: dialect::create_schema(D, &table()) =>
            r#"CREATE TABLE IF NOT EXISTS "ReportPublication" ("ReportId" TEXT NOT NULL PRIMARY KEY, "Generation" INTEGER NOT NULL DEFAULT 0, "LeaseOwner" TEXT NULL, "LeaseUntilUtc" INTEGER NULL, "PublishedGeneration" INTEGER NOT NULL DEFAULT 0, "LeaseEpoch" INTEGER NOT NULL DEFAULT 0, "Payload" TEXT NULL)"#,
        create_schema_bigint_key: dialect::create_schema(D, &FencedTable::builder().key_type(KeyType::BigInt).table("main.Jobs").build().unwrap()) =>
            r#"CREATE TABLE IF NOT EXISTS "main"."Jobs" ("ReportId" INTEGER NOT NULL PRIMARY KEY, "Generation" INTEGER NOT NULL DEFAULT 0, "LeaseOwner" TEXT NULL, "LeaseUntilUtc" INTEGER NULL, "PublishedGeneration" INTEGER NOT NULL DEFAULT 0, "LeaseEpoch" INTEGER NOT NULL DEFAULT 0)"#,
        provision: dialect::provision(D, &table()) =>
            r#"INSERT INTO "ReportPublication" ("ReportId", "Generation", "PublishedGeneration") VALUES (?1, 0, 0) ON CONFLICT DO NOTHING"#,
        acquire: dialect::acquire(D, &table()) =>
            r#"UPDATE "ReportPublication" SET "Generation" = "Generation" + 1, "LeaseOwner" = ?2, "LeaseUntilUtc" = CAST(unixepoch('subsec') * 1000 AS INTEGER) + ?3, "LeaseEpoch" = (SELECT "Epoch" FROM "FencedEpoch" WHERE "Id" = 1) WHERE "ReportId" = ?1 AND ("LeaseUntilUtc" IS NULL OR "LeaseUntilUtc" <= CAST(unixepoch('subsec') * 1000 AS INTEGER) OR "LeaseEpoch" <> (SELECT "Epoch" FROM "FencedEpoch" WHERE "Id" = 1)) RETURNING "Generation", "LeaseEpoch""#,
        renew: dialect::renew(D, &table()) =>
            r#"UPDATE "ReportPublication" SET "LeaseUntilUtc" = CAST(unixepoch('subsec') * 1000 AS INTEGER) + ?4 WHERE "ReportId" = ?1 AND "Generation" = ?2 AND "LeaseOwner" = ?3 AND "LeaseUntilUtc" > CAST(unixepoch('subsec') * 1000 AS INTEGER) AND "LeaseEpoch" = (SELECT "Epoch" FROM "FencedEpoch" WHERE "Id" = 1)"#,
        lock: dialect::lock(D, &table()) =>
            // fenced-lint: allow(generation-rewind) the check-and-lock statement writes the generation unchanged to lock the row
            r#"UPDATE "ReportPublication" SET "Generation" = "Generation" WHERE "ReportId" = ?1 AND "Generation" = ?2 AND "LeaseOwner" = ?3 AND "LeaseUntilUtc" > CAST(unixepoch('subsec') * 1000 AS INTEGER) AND "LeaseEpoch" = (SELECT "Epoch" FROM "FencedEpoch" WHERE "Id" = 1)"#,
        lock_after_begin_reads: dialect::lock_after_begin(D, &table()) =>
            r#"SELECT 1 FROM "ReportPublication" WHERE "ReportId" = ?1 AND "Generation" = ?2 AND "LeaseOwner" = ?3 AND "LeaseUntilUtc" > CAST(unixepoch('subsec') * 1000 AS INTEGER) AND "LeaseEpoch" = (SELECT "Epoch" FROM "FencedEpoch" WHERE "Id" = 1)"#,
        release: dialect::release(D, &table()) =>
            r#"UPDATE "ReportPublication" SET "LeaseOwner" = NULL, "LeaseUntilUtc" = NULL WHERE "ReportId" = ?1 AND "Generation" = ?2 AND "LeaseOwner" = ?3"#,
        update: dialect::update(D, &table(), &[&payload()]) =>
            r#"UPDATE "ReportPublication" SET "Payload" = ?1 WHERE "ReportId" = ?2 AND "Generation" = ?3 AND "LeaseOwner" = ?4 AND "LeaseUntilUtc" > CAST(unixepoch('subsec') * 1000 AS INTEGER) AND "LeaseEpoch" = (SELECT "Epoch" FROM "FencedEpoch" WHERE "Id" = 1)"#,
        // The write lock is the database's: a deferred transaction's locking write is
        // the plain one.
        update_locking_is_the_update: dialect::update_locking(D, &table(), &[&payload()]) == dialect::update(D, &table(), &[&payload()]) => true,
        publish_locking_is_the_publish: dialect::publish_locking(D, &table(), &[&payload()], true) == dialect::publish(D, &table(), &[&payload()], true) => true,
        publish: dialect::publish(D, &table(), &[&payload()], false) =>
            r#"UPDATE "ReportPublication" SET "Payload" = ?1, "PublishedGeneration" = ?3 WHERE "ReportId" = ?2 AND "Generation" = ?3 AND "LeaseOwner" = ?4 AND "LeaseUntilUtc" > CAST(unixepoch('subsec') * 1000 AS INTEGER) AND "LeaseEpoch" = (SELECT "Epoch" FROM "FencedEpoch" WHERE "Id" = 1) AND "PublishedGeneration" < ?3"#,
        publish_and_release: dialect::publish(D, &table(), &[&payload()], true) =>
            r#"UPDATE "ReportPublication" SET "Payload" = ?1, "PublishedGeneration" = ?3, "LeaseOwner" = NULL, "LeaseUntilUtc" = NULL WHERE "ReportId" = ?2 AND "Generation" = ?3 AND "LeaseOwner" = ?4 AND "LeaseUntilUtc" > CAST(unixepoch('subsec') * 1000 AS INTEGER) AND "LeaseEpoch" = (SELECT "Epoch" FROM "FencedEpoch" WHERE "Id" = 1) AND "PublishedGeneration" < ?3"#,
        publish_sets_published_at: dialect::publish(D, &article(), &[&payload()], false) =>
            r#"UPDATE "ReportPublication" SET "Payload" = ?1, "PublishedGeneration" = ?3, "PublishedAtUtc" = CAST(unixepoch('subsec') * 1000 AS INTEGER) WHERE "ReportId" = ?2 AND "Generation" = ?3 AND "LeaseOwner" = ?4 AND "LeaseUntilUtc" > CAST(unixepoch('subsec') * 1000 AS INTEGER) AND "LeaseEpoch" = (SELECT "Epoch" FROM "FencedEpoch" WHERE "Id" = 1) AND "PublishedGeneration" < ?3"#,
    }

    #[test]
    fn create_schema_with_published_at() {
        assert!(dialect::create_schema(D, &article()).ends_with(
            r#""PublishedGeneration" INTEGER NOT NULL DEFAULT 0, "LeaseEpoch" INTEGER NOT NULL DEFAULT 0, "PublishedAtUtc" INTEGER NULL, "Payload" TEXT NULL)"#
        ));
    }

    renders! {
        create_epoch_table: dialect::create_epoch_table(D, &table()) =>
            r#"CREATE TABLE IF NOT EXISTS "FencedEpoch" ("Id" INTEGER NOT NULL PRIMARY KEY CHECK ("Id" = 1), "Epoch" INTEGER NOT NULL)"#,
        seed_epoch: dialect::seed_epoch(D, &table()) =>
            r#"INSERT INTO "FencedEpoch" ("Id", "Epoch") VALUES (1, 1) ON CONFLICT DO NOTHING"#,
        create_operations_table: dialect::create_operations_table(D, &table()) =>
            r#"CREATE TABLE IF NOT EXISTS "FencedOperation" ("OperationId" TEXT NOT NULL PRIMARY KEY, "Key" TEXT NOT NULL, "Generation" INTEGER NOT NULL, "RecordedAt" INTEGER NOT NULL)"#,
        advance_epoch: dialect::advance_epoch(D, &table()) =>
            r#"UPDATE "FencedEpoch" SET "Epoch" = MAX("Epoch" + 1, CAST(unixepoch('subsec') * 1000 AS INTEGER), ?1) WHERE "Id" = 1 RETURNING "Epoch""#,
        current_epoch: dialect::current_epoch(D, &table()) =>
            r#"SELECT "Epoch" FROM "FencedEpoch" WHERE "Id" = 1"#,
        resolve_operation: dialect::resolve_operation(D, &table()) =>
            r#"SELECT "Generation" FROM "FencedOperation" WHERE "OperationId" = ?1"#,
        record_operation: dialect::record_operation(D, &table()) =>
            r#"INSERT INTO "FencedOperation" ("OperationId", "Key", "Generation", "RecordedAt") VALUES (?1, ?2, ?3, CAST(unixepoch('subsec') * 1000 AS INTEGER))"#,
        update_recorded: dialect::update_recorded(D, &table(), &[&payload()]) =>
            r#"UPDATE "ReportPublication" SET "Payload" = ?1 WHERE "ReportId" = ?2 AND "Generation" = ?3 AND "LeaseOwner" = ?4 AND "LeaseUntilUtc" > CAST(unixepoch('subsec') * 1000 AS INTEGER) AND "LeaseEpoch" = (SELECT "Epoch" FROM "FencedEpoch" WHERE "Id" = 1) AND NOT EXISTS (SELECT 1 FROM "FencedOperation" WHERE "OperationId" = ?5)"#,
        publish_recorded_and_release: dialect::publish_recorded(D, &table(), &[&payload()], true) =>
            r#"UPDATE "ReportPublication" SET "Payload" = ?1, "PublishedGeneration" = ?3, "LeaseOwner" = NULL, "LeaseUntilUtc" = NULL WHERE "ReportId" = ?2 AND "Generation" = ?3 AND "LeaseOwner" = ?4 AND "LeaseUntilUtc" > CAST(unixepoch('subsec') * 1000 AS INTEGER) AND "LeaseEpoch" = (SELECT "Epoch" FROM "FencedEpoch" WHERE "Id" = 1) AND "PublishedGeneration" < ?3 AND NOT EXISTS (SELECT 1 FROM "FencedOperation" WHERE "OperationId" = ?5)"#,
    }
}
