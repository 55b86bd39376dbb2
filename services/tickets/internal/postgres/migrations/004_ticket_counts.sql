-- Per-customer, per-status ticket counters: the list's totalCount without a
-- count(*) over every ticket of the customer, when it is filtered by status
-- or isClosed only (or not at all).
--
-- Each transaction adds its changes to the slot of its backend
-- (pg_backend_pid() % 16), so concurrent writers of one customer rarely
-- wait on the same counter row; a count is the sum over the slots (at most
-- 5 x 16 rows, read through the primary key). A slot's n may be negative (a
-- ticket counted in one slot and deleted through another): only the sum
-- means anything.
CREATE TABLE ticket_counts (
    customer_id bigint   NOT NULL,
    status      text     NOT NULL,
    slot        smallint NOT NULL,
    n           bigint   NOT NULL,
    PRIMARY KEY (customer_id, status, slot)
);

-- Statement-level triggers: the changes of one statement are summed per
-- (customer, status) and applied in that order, so two statements never
-- take counter rows in opposite orders (no deadlock between bulk updates),
-- and an UPDATE that leaves every status as it was (updated_at, subject...)
-- writes nothing.
-- The function keeps the migration's search_path (this schema), so a write
-- to tickets under another search_path (an administrator's session) counts
-- too.
CREATE FUNCTION ticket_counts_apply() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO ticket_counts AS c (customer_id, status, slot, n)
        SELECT customer_id, status, pg_backend_pid() % 16, count(*) FROM new_rows
        GROUP BY customer_id, status ORDER BY customer_id, status
        ON CONFLICT (customer_id, status, slot) DO UPDATE SET n = c.n + EXCLUDED.n;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO ticket_counts AS c (customer_id, status, slot, n)
        SELECT customer_id, status, pg_backend_pid() % 16, -count(*) FROM old_rows
        GROUP BY customer_id, status ORDER BY customer_id, status
        ON CONFLICT (customer_id, status, slot) DO UPDATE SET n = c.n + EXCLUDED.n;
    ELSE
        INSERT INTO ticket_counts AS c (customer_id, status, slot, n)
        SELECT customer_id, status, pg_backend_pid() % 16, sum(d) FROM (
            SELECT customer_id, status, -1 AS d FROM old_rows
            UNION ALL
            SELECT customer_id, status, 1 FROM new_rows) x
        GROUP BY customer_id, status HAVING sum(d) <> 0 ORDER BY customer_id, status
        ON CONFLICT (customer_id, status, slot) DO UPDATE SET n = c.n + EXCLUDED.n;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER ticket_counts_insert AFTER INSERT ON tickets
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ticket_counts_apply();
CREATE TRIGGER ticket_counts_update AFTER UPDATE ON tickets
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ticket_counts_apply();
CREATE TRIGGER ticket_counts_delete AFTER DELETE ON tickets
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION ticket_counts_apply();

-- The tickets written before the triggers existed; no writer may slip in
-- between the count and the triggers' commit.
LOCK TABLE tickets IN SHARE MODE;
INSERT INTO ticket_counts (customer_id, status, slot, n)
SELECT customer_id, status, 0, count(*) FROM tickets GROUP BY customer_id, status;
