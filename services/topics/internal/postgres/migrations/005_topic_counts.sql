-- Per-customer counters of the live (not soft-deleted) topics: the
-- totalCount of GET /api/Topics without a name filter, read through the
-- primary key instead of a count(*) over every live topic of the customer
-- on every page (1,000 topics: half of the list's database time).
--
-- As tickets' ticket_counts: each transaction adds its changes to the slot
-- of its backend (pg_backend_pid() % 16), so concurrent writers of one
-- customer rarely wait on the same counter row; the count is the sum over
-- the slots. A slot's n may be negative: only the sum means anything. The
-- triggers write in the transaction of the change, so every snapshot sees
-- the topics and their count alike.
CREATE TABLE topic_counts (
    customer_id bigint   NOT NULL,
    slot        smallint NOT NULL,
    n           bigint   NOT NULL,
    PRIMARY KEY (customer_id, slot)
);

-- Statement-level triggers: the changes of one statement are summed per
-- customer and applied in customer order (no deadlock between bulk
-- statements), and an UPDATE that keeps every topic live or deleted as it
-- was (a rename) writes nothing. The function keeps the migration's
-- search_path (this schema), so a write to topics under another search_path
-- (an administrator's session) counts too.
CREATE FUNCTION topic_counts_apply() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO topic_counts AS c (customer_id, slot, n)
        SELECT customer_id, pg_backend_pid() % 16, count(*) FROM new_rows WHERE deleted_at IS NULL
        GROUP BY customer_id ORDER BY customer_id
        ON CONFLICT (customer_id, slot) DO UPDATE SET n = c.n + EXCLUDED.n;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO topic_counts AS c (customer_id, slot, n)
        SELECT customer_id, pg_backend_pid() % 16, -count(*) FROM old_rows WHERE deleted_at IS NULL
        GROUP BY customer_id ORDER BY customer_id
        ON CONFLICT (customer_id, slot) DO UPDATE SET n = c.n + EXCLUDED.n;
    ELSE
        INSERT INTO topic_counts AS c (customer_id, slot, n)
        SELECT customer_id, pg_backend_pid() % 16, sum(d) FROM (
            SELECT customer_id, -1 AS d FROM old_rows WHERE deleted_at IS NULL
            UNION ALL
            SELECT customer_id, 1 FROM new_rows WHERE deleted_at IS NULL) x
        GROUP BY customer_id HAVING sum(d) <> 0 ORDER BY customer_id
        ON CONFLICT (customer_id, slot) DO UPDATE SET n = c.n + EXCLUDED.n;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER topic_counts_insert AFTER INSERT ON topics
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION topic_counts_apply();
CREATE TRIGGER topic_counts_update AFTER UPDATE ON topics
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION topic_counts_apply();
CREATE TRIGGER topic_counts_delete AFTER DELETE ON topics
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION topic_counts_apply();

-- The topics written before the triggers existed; no writer may slip in
-- between the count and the triggers' commit.
LOCK TABLE topics IN SHARE MODE;
INSERT INTO topic_counts (customer_id, slot, n)
SELECT customer_id, 0, count(*) FROM topics WHERE deleted_at IS NULL GROUP BY customer_id;
