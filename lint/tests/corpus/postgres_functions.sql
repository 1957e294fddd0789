-- PostgreSQL: functions, upserts, data-modifying CTEs.
CREATE TABLE IF NOT EXISTS report_publication (
    report_id uuid PRIMARY KEY,
    generation bigint NOT NULL DEFAULT 0,
    lease_owner uuid,
    lease_until timestamptz,
    published_generation bigint NOT NULL DEFAULT 0,
    payload text
);

CREATE OR REPLACE FUNCTION publish_report(p_report uuid, p_generation bigint, p_owner uuid, p_payload text)
RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE report_publication
    SET payload = p_payload, published_generation = p_generation
    WHERE report_id = p_report
      AND generation = p_generation
      AND lease_owner = p_owner
      AND lease_until > clock_timestamp()
      AND published_generation < p_generation;
    IF NOT FOUND THEN
        UPDATE report_publication SET payload = p_payload WHERE report_id = p_report;
    END IF;
    RETURN FOUND;
END;
$$;

INSERT INTO report_publication AS t (report_id, payload)
VALUES ($1, $2)
ON CONFLICT (report_id) DO UPDATE
SET payload = excluded.payload
WHERE t.generation = $3 AND t.lease_owner = $4 AND t.lease_until > now()
RETURNING t.generation;

INSERT INTO report_publication (report_id, payload) VALUES ($1, $2)
ON CONFLICT (report_id) DO UPDATE SET payload = EXCLUDED.payload;

WITH expired AS (
    UPDATE "report_publication"
    SET "lease_until" = clock_timestamp() + interval '30 seconds'
    WHERE "report_id" = $1 AND "generation" = $2 AND "lease_owner" = $3
    RETURNING report_id
)
SELECT count(*) FROM expired;

DELETE FROM report_publication p USING retired r WHERE r.report_id = p.report_id;

UPDATE report_publication SET lease_owner = NULL, lease_until = NULL
WHERE report_id = $1 AND generation = $2 AND lease_owner = $3;

GRANT SELECT ON report_publication TO reader;
GRANT ALL PRIVILEGES ON TABLE report_publication TO app_writer;
