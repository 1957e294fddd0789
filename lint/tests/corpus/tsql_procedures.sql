:setvar SchemaName dbo
:on error exit
SET NOCOUNT ON
GO

/* The lease protocol as stored procedures, the way SSMS scripts them. */
CREATE PROCEDURE [dbo].[AcquireReport]
    @reportId uniqueidentifier,
    @owner uniqueidentifier,
    @leaseSeconds int
AS
BEGIN
    SET NOCOUNT ON
    UPDATE dbo.ReportPublication
    SET Generation = Generation + 1,
        LeaseOwner = @owner,
        LeaseUntilUtc = DATEADD(second, @leaseSeconds, SYSUTCDATETIME())
    OUTPUT inserted.Generation
    WHERE ReportId = @reportId
      AND (LeaseUntilUtc IS NULL OR LeaseUntilUtc <= SYSUTCDATETIME())
END
GO

CREATE PROCEDURE dbo.PublishReport @reportId uniqueidentifier, @generation bigint, @owner uniqueidentifier, @payload nvarchar(max)
AS
BEGIN TRY
    BEGIN TRANSACTION
    UPDATE [dbo].[ReportPublication]
    SET [Payload] = @payload,
        [PublishedGeneration] = @generation,
        [PublishedAtUtc] = SYSUTCDATETIME()
    WHERE [ReportId] = @reportId
      AND [Generation] = @generation
      AND [LeaseOwner] = @owner
      AND [LeaseUntilUtc] > SYSUTCDATETIME() AND [LeaseEpoch] = (SELECT [Epoch] FROM [dbo].[FencedEpoch] WHERE [Id] = 1)
      AND [PublishedGeneration] < @generation
    IF @@ROWCOUNT = 0
        THROW 50001, 'publication refused', 1
    COMMIT TRANSACTION
END TRY
BEGIN CATCH
    IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION
    UPDATE dbo.ReportPublication SET LeaseOwner = NULL, LeaseUntilUtc = NULL WHERE ReportId = @reportId
    ;THROW
END CATCH
GO

-- Repair job: takes the first stuck rows, no fence at all.
UPDATE TOP (100) dbo.ReportPublication
SET Payload = NULL
WHERE PublishedAtUtc < DATEADD(day, -30, SYSUTCDATETIME())
OPTION (MAXDOP 1)
GO

-- fenced-lint: allow(fenced-row-delete) retention job; rows are retired before deletion
DELETE dbo.ReportPublication WHERE ReportId IN (SELECT ReportId FROM dbo.RetiredReports)
GO 2

UPDATE r
SET r.Payload = s.Payload
FROM dbo.ReportPublication AS r
INNER JOIN staging.Reports s ON s.ReportId = r.ReportId
WHERE r.Generation = s.Generation
GO

MERGE dbo.ReportPublication WITH (HOLDLOCK) AS target
USING (SELECT @reportId AS ReportId) AS source
ON target.ReportId = source.ReportId
WHEN MATCHED AND target.Generation = @generation AND target.LeaseOwner = @owner AND target.LeaseUntilUtc > @clientNow THEN
    UPDATE SET Payload = @payload
WHEN NOT MATCHED THEN
    INSERT (ReportId, Generation, PublishedGeneration) VALUES (source.ReportId, 0, 0);
GO

IF EXISTS (SELECT 1 FROM dbo.ReportPublication WHERE ReportId = <report_id, uniqueidentifier, NEWID()>)
    UPDATE <table_name, sysname, ReportPublication>
    SET LeaseUntilUtc = DATEADD(second, 30, SYSUTCDATETIME())
    WHERE ReportId = <report_id, uniqueidentifier, NEWID()> AND Generation = @generation AND LeaseOwner = @owner
ELSE
    PRINT 'missing'
GO

UPDATE dbo.ReportPublication SET Generation = @generation WHERE ReportId = @reportId AND Generation = @old AND LeaseOwner = @owner AND LeaseUntilUtc > SYSUTCDATETIME()
UPDATE dbo.AuditLog SET Seen = 1 WHERE Id = @id
GRANT SELECT, UPDATE ON OBJECT::dbo.ReportPublication TO [ReportService]
GRANT EXECUTE ON dbo.PublishReport TO [ReportService]
GO
