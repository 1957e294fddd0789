//! SQL Server text: `SYSUTCDATETIME()`, `datetime2(7)` expiry, `@Pn` placeholders,
//! `OUTPUT inserted.…`.

use crate::dialect::kind::Dialect;
use crate::error::MSSQL_REPLAYED;
use crate::table::{ColumnType, QualifiedName};

/// Raises error 51000 unless a transaction is open: the first statement of the
/// check-and-lock in a caller's transaction ([`crate::dialect::lock`]) and of each
/// statement's check ([`crate::dialect::still_fenced`]).
pub(crate) const OUTSIDE_A_TRANSACTION: &str = "IF @@TRANCOUNT = 0 THROW 51000, \
     N'fenced: a fenced transaction''s statement needs its transaction open', 1;";

/// Raises error 51002 in a `SNAPSHOT` transaction: it reads the recovery epoch as it
/// was when its snapshot was taken, so an advance made since would not end the leases
/// issued before it. Every session may read its own row of `sys.dm_exec_sessions`.
pub(crate) const IN_A_SNAPSHOT: &str = "IF EXISTS (SELECT 1 FROM sys.dm_exec_sessions \
     WHERE session_id = @@SPID AND transaction_isolation_level = 5) THROW 51002, \
     N'fenced: a SNAPSHOT transaction reads the recovery epoch as of its snapshot and \
     cannot check a lease; fence in a READ COMMITTED transaction', 1;";

/// Takes the application lock of `epoch_table` in `mode` (`Shared` or `Exclusive`)
/// until the transaction ends, raising error 51003 if it is not granted: a fenced
/// transaction holds it shared, an epoch advance exclusively, so that an advance waits
/// for every open fenced transaction and none begins while one is under way. An
/// application lock rather than a table hint: Babelfish ignores `HOLDLOCK`, and honours
/// `sp_getapplock`. The name inside the literal is a validated identifier, with no
/// quote possible; SQL Server keeps a resource name's first 255 characters.
pub(crate) fn epoch_lock(epoch_table: &QualifiedName, mode: &str) -> String {
    format!(
        "DECLARE @fenced_lock int; EXEC @fenced_lock = sp_getapplock @Resource = \
         N'fenced epoch {}', @LockMode = N'{mode}', @LockOwner = N'Transaction'; \
         IF @fenced_lock < 0 THROW 51003, N'fenced: the recovery epoch''s lock was not \
         granted', 1;",
        epoch_table.quoted(Dialect::Mssql)
    )
}

/// The name of a fenced transaction's own application lock, from the uuid at
/// `placeholder` that the guard draws for each check-and-lock: unique to that lock, so
/// a transaction holds it only if the lock passed in that very transaction.
fn lease_lock_name(placeholder: &str) -> String {
    format!("CONCAT(N'fenced lease ', {placeholder})")
}

/// After the check-and-lock's `UPDATE`: where it locked the lease's row, takes the
/// fenced transaction's own application lock (named by the uuid at `placeholder`) until
/// the transaction ends, which every later statement's check asks for
/// ([`held_lease_lock`]); then leaves `@@ROWCOUNT` as the `UPDATE` left it, the count
/// the caller reads.
pub(crate) fn take_lease_lock(placeholder: &str) -> String {
    format!(
        "DECLARE @fenced_locked int = @@ROWCOUNT; IF @fenced_locked = 1 BEGIN \
         DECLARE @fenced_lease nvarchar(255) = {}, @fenced_lease_lock int; \
         EXEC @fenced_lease_lock = sp_getapplock @Resource = @fenced_lease, \
         @LockMode = N'Exclusive', @LockOwner = N'Transaction'; IF @fenced_lease_lock < 0 \
         THROW 51003, N'fenced: the fenced transaction''s lock was not granted', 1; END; \
         SELECT @fenced_locked = @fenced_locked WHERE @fenced_locked = 1",
        lease_lock_name(placeholder)
    )
}

/// Raises error 51001 unless the transaction holds the fenced transaction's own
/// application lock, named by the uuid at `placeholder` ([`take_lease_lock`]).
pub(crate) fn held_lease_lock(placeholder: &str) -> String {
    format!(
        "IF APPLOCK_MODE(N'public', {}, N'Transaction') = N'NoLock' THROW 51001, \
         N'fenced: the transaction no longer holds the lock of the fenced transaction''s \
         lease', 1;",
        lease_lock_name(placeholder)
    )
}

/// The database's clock, in UTC.
pub(crate) const CLOCK: &str = "SYSUTCDATETIME()";

/// T-SQL running `body` atomically: in a transaction of its own, committed at its end,
/// or, inside a transaction the caller holds open, in a savepoint of it. On any error
/// the body's work is undone (the transaction rolled back, or the caller's rolled back
/// to the savepoint, never further) and the error raised again: in a transaction of its
/// own by `THROW`, with the original number; in the caller's as
/// [`MSSQL_REPLAYED`]` + ` that number, since Babelfish ends the caller's transaction on a
/// bare `THROW` of some errors (a CHECK violation's). A caller's transaction that the
/// error left uncommittable (`XACT_STATE()` -1, as `XACT_ABORT ON` makes every error)
/// stays as SQL Server leaves it for a plain statement: the caller can only roll it
/// back.
pub(crate) fn in_transaction(body: &str) -> String {
    format!(
        "DECLARE @fenced_outer int = @@TRANCOUNT; BEGIN TRY \
         IF @fenced_outer = 0 BEGIN TRANSACTION ELSE SAVE TRANSACTION fenced_step; \
         {body} IF @fenced_outer = 0 COMMIT TRANSACTION; END TRY \
         BEGIN CATCH IF @fenced_outer = 0 BEGIN IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION; \
         THROW; END; IF XACT_STATE() = 1 ROLLBACK TRANSACTION fenced_step; \
         DECLARE @fenced_error int = {MSSQL_REPLAYED} + ERROR_NUMBER(), \
         @fenced_message nvarchar(2048) = ERROR_MESSAGE(); \
         THROW @fenced_error, @fenced_message, 1; END CATCH;"
    )
}

pub(crate) fn expiry_after(ttl: usize) -> String {
    format!("DATEADD(millisecond, CAST(@P{ttl} AS int), {CLOCK})")
}

pub(crate) fn column_type(t: ColumnType) -> &'static str {
    match t {
        ColumnType::Bool => "bit",
        ColumnType::BigInt => "bigint",
        ColumnType::Double => "float",
        ColumnType::Text => "nvarchar(max)",
        ColumnType::Bytes => "varbinary(max)",
        ColumnType::Uuid => "uniqueidentifier",
    }
}

#[cfg(test)]
mod tests {
    use crate::dialect::fixtures::{self, payload};
    use crate::dialect::{self, Dialect, renders};
    use crate::table::{FencedTable, KeyType};

    const D: Dialect = Dialect::Mssql;

    fn table() -> FencedTable {
        fixtures::table("dbo.ReportPublication")
    }

    fn article() -> FencedTable {
        fixtures::article("dbo.ReportPublication")
    }

    renders! {
        placeholder: D.placeholder(7) => "@P7",
        clock: D.clock() => "SYSUTCDATETIME()",
        fence: dialect::fence_predicate(D, &table(), 3) =>
            "[ReportId] = @P3 AND [Generation] = @P4 AND [LeaseOwner] = @P5 AND [LeaseUntilUtc] > SYSUTCDATETIME() AND [LeaseEpoch] = (SELECT [Epoch] FROM [dbo].[FencedEpoch] WHERE [Id] = 1)",
        publish_once_predicate: dialect::publish_once_predicate(D, &table(), 3) =>
            "[PublishedGeneration] < @P4",
        publish_once_assignment: dialect::publish_once_assignment(D, &table(), 3) =>
            "[PublishedGeneration] = @P4",
        create_schema: dialect::create_schema(D, &table()) =>
            "IF OBJECT_ID(N'[dbo].[ReportPublication]', N'U') IS NULL CREATE TABLE [dbo].[ReportPublication] ([ReportId] uniqueidentifier NOT NULL PRIMARY KEY, [Generation] bigint NOT NULL DEFAULT 0, [LeaseOwner] uniqueidentifier NULL, [LeaseUntilUtc] datetime2(7) NULL, [PublishedGeneration] bigint NOT NULL DEFAULT 0, [LeaseEpoch] bigint NOT NULL DEFAULT 0, [Payload] nvarchar(max) NULL)",
        create_schema_text_key: dialect::create_schema(D, &FencedTable::builder().key_type(KeyType::Text).build().unwrap()) =>
            "IF OBJECT_ID(N'[ReportPublication]', N'U') IS NULL CREATE TABLE [ReportPublication] ([ReportId] nvarchar(450) COLLATE Latin1_General_100_BIN2 NOT NULL PRIMARY KEY, [Generation] bigint NOT NULL DEFAULT 0, [LeaseOwner] uniqueidentifier NULL, [LeaseUntilUtc] datetime2(7) NULL, [PublishedGeneration] bigint NOT NULL DEFAULT 0, [LeaseEpoch] bigint NOT NULL DEFAULT 0)",
        provision: dialect::provision(D, &table()) =>
            "INSERT INTO [dbo].[ReportPublication] ([ReportId], [Generation], [PublishedGeneration]) SELECT @P1, 0, 0 WHERE NOT EXISTS (SELECT 1 FROM [dbo].[ReportPublication] WITH (UPDLOCK, HOLDLOCK) WHERE [ReportId] = @P1)",
        acquire: dialect::acquire(D, &table()) =>
            "DECLARE @fenced_rows int, @fenced_generation bigint, @fenced_epoch bigint; DECLARE @fenced_outer int = @@TRANCOUNT; BEGIN TRY IF @fenced_outer = 0 BEGIN TRANSACTION ELSE SAVE TRANSACTION fenced_step; UPDATE [dbo].[ReportPublication] SET [Generation] = [Generation] + 1, [LeaseOwner] = @P2, [LeaseUntilUtc] = DATEADD(millisecond, CAST(@P3 AS int), SYSUTCDATETIME()), [LeaseEpoch] = (SELECT [Epoch] FROM [dbo].[FencedEpoch] WHERE [Id] = 1) WHERE [ReportId] = @P1 AND ([LeaseUntilUtc] IS NULL OR [LeaseUntilUtc] <= SYSUTCDATETIME() OR [LeaseEpoch] <> (SELECT [Epoch] FROM [dbo].[FencedEpoch] WHERE [Id] = 1)); SET @fenced_rows = @@ROWCOUNT; IF @fenced_rows > 0 SELECT @fenced_generation = [Generation], @fenced_epoch = [LeaseEpoch] FROM [dbo].[ReportPublication] WHERE [ReportId] = @P1; IF @fenced_outer = 0 COMMIT TRANSACTION; END TRY BEGIN CATCH IF @fenced_outer = 0 BEGIN IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION; THROW; END; IF XACT_STATE() = 1 ROLLBACK TRANSACTION fenced_step; DECLARE @fenced_error int = 1000000 + ERROR_NUMBER(), @fenced_message nvarchar(2048) = ERROR_MESSAGE(); THROW @fenced_error, @fenced_message, 1; END CATCH; SELECT @fenced_generation, @fenced_epoch WHERE @fenced_rows > 0",
        renew: dialect::renew(D, &table()) =>
            "UPDATE [dbo].[ReportPublication] SET [LeaseUntilUtc] = DATEADD(millisecond, CAST(@P4 AS int), SYSUTCDATETIME()) WHERE [ReportId] = @P1 AND [Generation] = @P2 AND [LeaseOwner] = @P3 AND [LeaseUntilUtc] > SYSUTCDATETIME() AND [LeaseEpoch] = (SELECT [Epoch] FROM [dbo].[FencedEpoch] WHERE [Id] = 1)",
        lock: dialect::lock(D, &table()) =>
            // fenced-lint: allow(generation-rewind) the check-and-lock statement writes the generation unchanged to lock the row
            "IF @@TRANCOUNT = 0 THROW 51000, N'fenced: a fenced transaction''s statement needs its transaction open', 1; IF EXISTS (SELECT 1 FROM sys.dm_exec_sessions WHERE session_id = @@SPID AND transaction_isolation_level = 5) THROW 51002, N'fenced: a SNAPSHOT transaction reads the recovery epoch as of its snapshot and cannot check a lease; fence in a READ COMMITTED transaction', 1; DECLARE @fenced_lock int; EXEC @fenced_lock = sp_getapplock @Resource = N'fenced epoch [dbo].[FencedEpoch]', @LockMode = N'Shared', @LockOwner = N'Transaction'; IF @fenced_lock < 0 THROW 51003, N'fenced: the recovery epoch''s lock was not granted', 1; UPDATE [dbo].[ReportPublication] SET [Generation] = [Generation] WHERE [ReportId] = @P1 AND [Generation] = @P2 AND [LeaseOwner] = @P3 AND [LeaseUntilUtc] > SYSUTCDATETIME() AND [LeaseEpoch] = (SELECT [Epoch] FROM [dbo].[FencedEpoch] WITH (HOLDLOCK) WHERE [Id] = 1); DECLARE @fenced_locked int = @@ROWCOUNT; IF @fenced_locked = 1 BEGIN DECLARE @fenced_lease nvarchar(255) = CONCAT(N'fenced lease ', @P4), @fenced_lease_lock int; EXEC @fenced_lease_lock = sp_getapplock @Resource = @fenced_lease, @LockMode = N'Exclusive', @LockOwner = N'Transaction'; IF @fenced_lease_lock < 0 THROW 51003, N'fenced: the fenced transaction''s lock was not granted', 1; END; SELECT @fenced_locked = @fenced_locked WHERE @fenced_locked = 1",
        lock_after_begin: dialect::lock_after_begin(D, &table()) =>
            // fenced-lint: allow(generation-rewind) the check-and-lock statement writes the generation unchanged to lock the row
            "DECLARE @fenced_lock int; EXEC @fenced_lock = sp_getapplock @Resource = N'fenced epoch [dbo].[FencedEpoch]', @LockMode = N'Shared', @LockOwner = N'Transaction'; IF @fenced_lock < 0 THROW 51003, N'fenced: the recovery epoch''s lock was not granted', 1; UPDATE [dbo].[ReportPublication] SET [Generation] = [Generation] WHERE [ReportId] = @P1 AND [Generation] = @P2 AND [LeaseOwner] = @P3 AND [LeaseUntilUtc] > SYSUTCDATETIME() AND [LeaseEpoch] = (SELECT [Epoch] FROM [dbo].[FencedEpoch] WITH (HOLDLOCK) WHERE [Id] = 1); DECLARE @fenced_locked int = @@ROWCOUNT; IF @fenced_locked = 1 BEGIN DECLARE @fenced_lease nvarchar(255) = CONCAT(N'fenced lease ', @P4), @fenced_lease_lock int; EXEC @fenced_lease_lock = sp_getapplock @Resource = @fenced_lease, @LockMode = N'Exclusive', @LockOwner = N'Transaction'; IF @fenced_lease_lock < 0 THROW 51003, N'fenced: the fenced transaction''s lock was not granted', 1; END; SELECT @fenced_locked = @fenced_locked WHERE @fenced_locked = 1",
        begin: dialect::begin(D) =>
            "SET TRANSACTION ISOLATION LEVEL READ COMMITTED; BEGIN TRANSACTION",
        still_fenced: dialect::still_fenced(3) =>
            "IF @@TRANCOUNT = 0 THROW 51000, N'fenced: a fenced transaction''s statement needs its transaction open', 1; IF APPLOCK_MODE(N'public', CONCAT(N'fenced lease ', @P3), N'Transaction') = N'NoLock' THROW 51001, N'fenced: the transaction no longer holds the lock of the fenced transaction''s lease', 1; ",
        release: dialect::release(D, &table()) =>
            "UPDATE [dbo].[ReportPublication] SET [LeaseOwner] = NULL, [LeaseUntilUtc] = NULL WHERE [ReportId] = @P1 AND [Generation] = @P2 AND [LeaseOwner] = @P3",
        update: dialect::update(D, &table(), &[&payload()]) =>
            "UPDATE [dbo].[ReportPublication] SET [Payload] = @P1 WHERE [ReportId] = @P2 AND [Generation] = @P3 AND [LeaseOwner] = @P4 AND [LeaseUntilUtc] > SYSUTCDATETIME() AND [LeaseEpoch] = (SELECT [Epoch] FROM [dbo].[FencedEpoch] WHERE [Id] = 1)",
        publish: dialect::publish(D, &table(), &[&payload()], false) =>
            "UPDATE [dbo].[ReportPublication] SET [Payload] = @P1, [PublishedGeneration] = @P3 WHERE [ReportId] = @P2 AND [Generation] = @P3 AND [LeaseOwner] = @P4 AND [LeaseUntilUtc] > SYSUTCDATETIME() AND [LeaseEpoch] = (SELECT [Epoch] FROM [dbo].[FencedEpoch] WHERE [Id] = 1) AND [PublishedGeneration] < @P3",
        publish_and_release: dialect::publish(D, &table(), &[&payload()], true) =>
            "UPDATE [dbo].[ReportPublication] SET [Payload] = @P1, [PublishedGeneration] = @P3, [LeaseOwner] = NULL, [LeaseUntilUtc] = NULL WHERE [ReportId] = @P2 AND [Generation] = @P3 AND [LeaseOwner] = @P4 AND [LeaseUntilUtc] > SYSUTCDATETIME() AND [LeaseEpoch] = (SELECT [Epoch] FROM [dbo].[FencedEpoch] WHERE [Id] = 1) AND [PublishedGeneration] < @P3",
        publish_sets_published_at: dialect::publish(D, &article(), &[&payload()], false) =>
            r#"UPDATE [dbo].[ReportPublication] SET [Payload] = @P1, [PublishedGeneration] = @P3, [PublishedAtUtc] = SYSUTCDATETIME() WHERE [ReportId] = @P2 AND [Generation] = @P3 AND [LeaseOwner] = @P4 AND [LeaseUntilUtc] > SYSUTCDATETIME() AND [LeaseEpoch] = (SELECT [Epoch] FROM [dbo].[FencedEpoch] WHERE [Id] = 1) AND [PublishedGeneration] < @P3"#,
        create_schema_with_published_at: dialect::create_schema(D, &article()).contains(r#"[PublishedGeneration] bigint NOT NULL DEFAULT 0, [LeaseEpoch] bigint NOT NULL DEFAULT 0, [PublishedAtUtc] datetime2(7) NULL, [Payload] nvarchar(max) NULL)"#) => true,
    }

    renders! {
        create_epoch_table: dialect::create_epoch_table(D, &table()) =>
            r#"IF OBJECT_ID(N'[dbo].[FencedEpoch]', N'U') IS NULL CREATE TABLE [dbo].[FencedEpoch] ([Id] int NOT NULL PRIMARY KEY CHECK ([Id] = 1), [Epoch] bigint NOT NULL)"#,
        seed_epoch: dialect::seed_epoch(D, &table()) =>
            r#"INSERT INTO [dbo].[FencedEpoch] ([Id], [Epoch]) SELECT 1, 1 WHERE NOT EXISTS (SELECT 1 FROM [dbo].[FencedEpoch] WITH (UPDLOCK, HOLDLOCK) WHERE [Id] = 1)"#,
        create_operations_table: dialect::create_operations_table(D, &table()) =>
            r#"IF OBJECT_ID(N'[dbo].[FencedOperation]', N'U') IS NULL CREATE TABLE [dbo].[FencedOperation] ([OperationId] uniqueidentifier NOT NULL PRIMARY KEY, [Key] uniqueidentifier NOT NULL, [Generation] bigint NOT NULL, [RecordedAt] datetime2(7) NOT NULL)"#,
        advance_epoch: dialect::advance_epoch(D, &table()) =>
            r#"DECLARE @fenced_rows int, @fenced_epoch bigint; DECLARE @fenced_outer int = @@TRANCOUNT; BEGIN TRY IF @fenced_outer = 0 BEGIN TRANSACTION ELSE SAVE TRANSACTION fenced_step; DECLARE @fenced_lock int; EXEC @fenced_lock = sp_getapplock @Resource = N'fenced epoch [dbo].[FencedEpoch]', @LockMode = N'Exclusive', @LockOwner = N'Transaction'; IF @fenced_lock < 0 THROW 51003, N'fenced: the recovery epoch''s lock was not granted', 1; UPDATE [dbo].[FencedEpoch] SET [Epoch] = (SELECT MAX(v) FROM (VALUES ([Epoch] + 1), (DATEDIFF_BIG(millisecond, '1970-01-01', SYSUTCDATETIME())), (CAST(@P1 AS bigint))) AS c(v)) WHERE [Id] = 1; SET @fenced_rows = @@ROWCOUNT; SELECT @fenced_epoch = [Epoch] FROM [dbo].[FencedEpoch] WHERE [Id] = 1; IF @fenced_outer = 0 COMMIT TRANSACTION; END TRY BEGIN CATCH IF @fenced_outer = 0 BEGIN IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION; THROW; END; IF XACT_STATE() = 1 ROLLBACK TRANSACTION fenced_step; DECLARE @fenced_error int = 1000000 + ERROR_NUMBER(), @fenced_message nvarchar(2048) = ERROR_MESSAGE(); THROW @fenced_error, @fenced_message, 1; END CATCH; SELECT @fenced_epoch WHERE @fenced_rows > 0"#,
        current_epoch: dialect::current_epoch(D, &table()) =>
            r#"SELECT [Epoch] FROM [dbo].[FencedEpoch] WHERE [Id] = 1"#,
        resolve_operation: dialect::resolve_operation(D, &table()) =>
            r#"SELECT [Generation] FROM [dbo].[FencedOperation] WHERE [OperationId] = @P1"#,
        record_operation: dialect::record_operation(D, &table()) =>
            r#"INSERT INTO [dbo].[FencedOperation] ([OperationId], [Key], [Generation], [RecordedAt]) VALUES (@P1, @P2, @P3, SYSUTCDATETIME())"#,
        update_recorded: dialect::update_recorded(D, &table(), &[&payload()]) =>
            r#"DECLARE @fenced_rows int; DECLARE @fenced_outer int = @@TRANCOUNT; BEGIN TRY IF @fenced_outer = 0 BEGIN TRANSACTION ELSE SAVE TRANSACTION fenced_step; UPDATE [dbo].[ReportPublication] SET [Payload] = @P1 WHERE [ReportId] = @P2 AND [Generation] = @P3 AND [LeaseOwner] = @P4 AND [LeaseUntilUtc] > SYSUTCDATETIME() AND [LeaseEpoch] = (SELECT [Epoch] FROM [dbo].[FencedEpoch] WHERE [Id] = 1) AND NOT EXISTS (SELECT 1 FROM [dbo].[FencedOperation] WHERE [OperationId] = @P5); SET @fenced_rows = @@ROWCOUNT; IF @fenced_rows > 0 INSERT INTO [dbo].[FencedOperation] ([OperationId], [Key], [Generation], [RecordedAt]) VALUES (CAST(@P5 AS uniqueidentifier), @P2, @P3, SYSUTCDATETIME()); IF @fenced_outer = 0 COMMIT TRANSACTION; END TRY BEGIN CATCH IF @fenced_outer = 0 BEGIN IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION; THROW; END; IF XACT_STATE() = 1 ROLLBACK TRANSACTION fenced_step; DECLARE @fenced_error int = 1000000 + ERROR_NUMBER(), @fenced_message nvarchar(2048) = ERROR_MESSAGE(); THROW @fenced_error, @fenced_message, 1; END CATCH; SELECT CAST(@fenced_rows AS bigint) AS [RowsAffected]"#,
        publish_recorded_and_release: dialect::publish_recorded(D, &table(), &[&payload()], true) =>
            r#"DECLARE @fenced_rows int; DECLARE @fenced_outer int = @@TRANCOUNT; BEGIN TRY IF @fenced_outer = 0 BEGIN TRANSACTION ELSE SAVE TRANSACTION fenced_step; UPDATE [dbo].[ReportPublication] SET [Payload] = @P1, [PublishedGeneration] = @P3, [LeaseOwner] = NULL, [LeaseUntilUtc] = NULL WHERE [ReportId] = @P2 AND [Generation] = @P3 AND [LeaseOwner] = @P4 AND [LeaseUntilUtc] > SYSUTCDATETIME() AND [LeaseEpoch] = (SELECT [Epoch] FROM [dbo].[FencedEpoch] WHERE [Id] = 1) AND [PublishedGeneration] < @P3 AND NOT EXISTS (SELECT 1 FROM [dbo].[FencedOperation] WHERE [OperationId] = @P5); SET @fenced_rows = @@ROWCOUNT; IF @fenced_rows > 0 INSERT INTO [dbo].[FencedOperation] ([OperationId], [Key], [Generation], [RecordedAt]) VALUES (CAST(@P5 AS uniqueidentifier), @P2, @P3, SYSUTCDATETIME()); IF @fenced_outer = 0 COMMIT TRANSACTION; END TRY BEGIN CATCH IF @fenced_outer = 0 BEGIN IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION; THROW; END; IF XACT_STATE() = 1 ROLLBACK TRANSACTION fenced_step; DECLARE @fenced_error int = 1000000 + ERROR_NUMBER(), @fenced_message nvarchar(2048) = ERROR_MESSAGE(); THROW @fenced_error, @fenced_message, 1; END CATCH; SELECT CAST(@fenced_rows AS bigint) AS [RowsAffected]"#,
    }
}
