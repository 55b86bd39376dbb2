-- Issue 26: a list's cost flat as one customer's tickets grow.
--
-- Per-channel and per-rep ticket counters, by status: the totalCount of a
-- list filtered by channelId or customerRepId (with or without status or
-- isClosed), which count(*) read at a cost growing with the matches (20,000
-- index entries for a channel of 100,000 tickets, 200,000 at 1,000,000).
-- Kept like ticket_counts (004): statement-level triggers sum each
-- statement's changes per (customer, kind, value, status) and apply them in
-- that order (no two statements take counter rows in opposite orders), into
-- the slot of the writing backend (pg_backend_pid() % 16), so concurrent
-- writers of one busy channel rarely wait on one row. A slot's n may be
-- negative; only the sum means anything. An UPDATE that moves no ticket
-- between channels, reps or statuses (a new message's updated_at) writes
-- nothing.
CREATE TABLE ticket_filter_counts (
    customer_id bigint   NOT NULL,
    kind        text     NOT NULL CHECK (kind IN ('channel', 'rep')),
    value       bigint   NOT NULL,
    status      text     NOT NULL,
    slot        smallint NOT NULL,
    n           bigint   NOT NULL,
    PRIMARY KEY (customer_id, kind, value, status, slot)
);
ALTER TABLE ticket_filter_counts SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000);

CREATE FUNCTION ticket_filter_counts_apply() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO ticket_filter_counts AS c (customer_id, kind, value, status, slot, n)
        SELECT customer_id, kind, value, status, pg_backend_pid() % 16, count(*) FROM (
            SELECT customer_id, 'channel' AS kind, channel_id AS value, status FROM new_rows
            UNION ALL
            SELECT customer_id, 'rep', customer_rep_id, status FROM new_rows WHERE customer_rep_id IS NOT NULL) x
        GROUP BY customer_id, kind, value, status ORDER BY customer_id, kind, value, status
        ON CONFLICT (customer_id, kind, value, status, slot) DO UPDATE SET n = c.n + EXCLUDED.n;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO ticket_filter_counts AS c (customer_id, kind, value, status, slot, n)
        SELECT customer_id, kind, value, status, pg_backend_pid() % 16, -count(*) FROM (
            SELECT customer_id, 'channel' AS kind, channel_id AS value, status FROM old_rows
            UNION ALL
            SELECT customer_id, 'rep', customer_rep_id, status FROM old_rows WHERE customer_rep_id IS NOT NULL) x
        GROUP BY customer_id, kind, value, status ORDER BY customer_id, kind, value, status
        ON CONFLICT (customer_id, kind, value, status, slot) DO UPDATE SET n = c.n + EXCLUDED.n;
    ELSE
        INSERT INTO ticket_filter_counts AS c (customer_id, kind, value, status, slot, n)
        SELECT customer_id, kind, value, status, pg_backend_pid() % 16, sum(d) FROM (
            SELECT customer_id, 'channel' AS kind, channel_id AS value, status, -1 AS d FROM old_rows
            UNION ALL
            SELECT customer_id, 'rep', customer_rep_id, status, -1 FROM old_rows WHERE customer_rep_id IS NOT NULL
            UNION ALL
            SELECT customer_id, 'channel', channel_id, status, 1 FROM new_rows
            UNION ALL
            SELECT customer_id, 'rep', customer_rep_id, status, 1 FROM new_rows WHERE customer_rep_id IS NOT NULL) x
        GROUP BY customer_id, kind, value, status HAVING sum(d) <> 0 ORDER BY customer_id, kind, value, status
        ON CONFLICT (customer_id, kind, value, status, slot) DO UPDATE SET n = c.n + EXCLUDED.n;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER ticket_filter_counts_insert AFTER INSERT ON tickets
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ticket_filter_counts_apply();
CREATE TRIGGER ticket_filter_counts_update AFTER UPDATE ON tickets
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ticket_filter_counts_apply();
CREATE TRIGGER ticket_filter_counts_delete AFTER DELETE ON tickets
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION ticket_filter_counts_apply();

-- The tickets written before the triggers existed; no writer may slip in
-- between the count and the triggers' commit.
LOCK TABLE tickets IN SHARE MODE;
INSERT INTO ticket_filter_counts (customer_id, kind, value, status, slot, n)
SELECT customer_id, 'channel', channel_id, status, 0, count(*) FROM tickets GROUP BY customer_id, channel_id, status
UNION ALL
SELECT customer_id, 'rep', customer_rep_id, status, 0, count(*) FROM tickets WHERE customer_rep_id IS NOT NULL
GROUP BY customer_id, customer_rep_id, status;
