-- Issue 26: a message no longer rewrites its ticket into every index.
--
-- Every message sets its ticket's updated_at (dateUpdated). While
-- tickets_updated_idx indexed that column, no such update could be HOT:
-- each one wrote a new entry into all ten ticket indexes (the subject's GIN
-- index included), with their WAL and, after each checkpoint, a full image
-- of every index page it touched (EXPLAIN (ANALYZE, WAL) of the update: 10
-- WAL records, 14-55 kB; as a HOT update: 1 record, 82 bytes).
--
-- The dateUpdated order now has a narrow table of its own: ticket_activity,
-- one row per ticket (its id, customer and updated_at), kept equal to
-- tickets.updated_at by the statement triggers that keep ticket_counts. A
-- message's update of the ticket row changes no indexed column and is HOT;
-- the activity row's update writes two small index entries. The dateUpdated
-- list walks ticket_activity_updated_idx and reads each ticket by its key.
CREATE TABLE ticket_activity (
    ticket_id   bigint      PRIMARY KEY,
    customer_id bigint      NOT NULL,
    updated_at  timestamptz NOT NULL
) WITH (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.05);

-- No writer may slip in between the copy and the triggers' commit.
LOCK TABLE tickets IN SHARE MODE;
INSERT INTO ticket_activity (ticket_id, customer_id, updated_at) SELECT ticket_id, customer_id, updated_at FROM tickets;
CREATE INDEX ticket_activity_updated_idx ON ticket_activity (customer_id, updated_at DESC, ticket_id DESC);
DROP INDEX tickets_updated_idx;
-- No fillfactor: a row moved by its first update lands on a page with
-- room, and its later versions are HOT there (pruned on the page). A
-- fillfactor of 85 also made the tickets table 15% larger, which tipped
-- the topic filter's plan (TestTkListPlanBounded100k) to a hash join over
-- every message.

-- The counters (004 and 015's per channel and rep) and now the activity
-- rows. An update pairs each row's old and new version by ticket id in one
-- pass: the activity rows whose updated_at changed are written one key at a
-- time (an index lookup each, whatever plan the session cached for an
-- earlier, larger statement), and the counters only when some status,
-- channel or rep changed, so a message's update (none of them changed)
-- runs no counter statement at all. 015's own update trigger, which ran its
-- statement on every update, is replaced by this one.
DROP TRIGGER ticket_filter_counts_update ON tickets;
CREATE OR REPLACE FUNCTION ticket_counts_apply() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    r record;
    moved boolean := false;
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO ticket_counts AS c (customer_id, status, slot, n)
        SELECT customer_id, status, pg_backend_pid() % 16, count(*) FROM new_rows
        GROUP BY customer_id, status ORDER BY customer_id, status
        ON CONFLICT (customer_id, status, slot) DO UPDATE SET n = c.n + EXCLUDED.n;
        INSERT INTO ticket_activity (ticket_id, customer_id, updated_at)
        SELECT ticket_id, customer_id, updated_at FROM new_rows;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO ticket_counts AS c (customer_id, status, slot, n)
        SELECT customer_id, status, pg_backend_pid() % 16, -count(*) FROM old_rows
        GROUP BY customer_id, status ORDER BY customer_id, status
        ON CONFLICT (customer_id, status, slot) DO UPDATE SET n = c.n + EXCLUDED.n;
        DELETE FROM ticket_activity WHERE ticket_id = ANY (ARRAY(SELECT ticket_id FROM old_rows));
    ELSE
        FOR r IN SELECT n.ticket_id, o.ticket_id AS old_id, n.customer_id, n.updated_at,
                (n.status, n.customer_id, n.channel_id, n.customer_rep_id)
                    IS DISTINCT FROM (o.status, o.customer_id, o.channel_id, o.customer_rep_id) AS moved,
                (n.updated_at, n.customer_id) IS DISTINCT FROM (o.updated_at, o.customer_id) AS touched
            FROM new_rows n FULL JOIN old_rows o ON o.ticket_id = n.ticket_id LOOP
            moved := moved OR r.moved;
            -- A version without its pair is a changed ticket_id (an
            -- administrator's): its rows are moved too.
            IF r.ticket_id IS NULL THEN
                DELETE FROM ticket_activity WHERE ticket_id = r.old_id;
            ELSIF r.old_id IS NULL THEN
                INSERT INTO ticket_activity AS a (ticket_id, customer_id, updated_at) VALUES (r.ticket_id, r.customer_id, r.updated_at)
                ON CONFLICT (ticket_id) DO UPDATE SET customer_id = EXCLUDED.customer_id, updated_at = EXCLUDED.updated_at;
            ELSIF r.touched THEN
                UPDATE ticket_activity SET customer_id = r.customer_id, updated_at = r.updated_at WHERE ticket_id = r.ticket_id;
            END IF;
        END LOOP;
        IF moved THEN
            INSERT INTO ticket_counts AS c (customer_id, status, slot, n)
            SELECT customer_id, status, pg_backend_pid() % 16, sum(d) FROM (
                SELECT customer_id, status, -1 AS d FROM old_rows
                UNION ALL
                SELECT customer_id, status, 1 FROM new_rows) x
            GROUP BY customer_id, status HAVING sum(d) <> 0 ORDER BY customer_id, status
            ON CONFLICT (customer_id, status, slot) DO UPDATE SET n = c.n + EXCLUDED.n;
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
    END IF;
    RETURN NULL;
END $$;
