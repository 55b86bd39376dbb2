-- Issue 26: the default order (newest first, the id breaking ties) within
-- each id filter and status, so the first page and each keyset page of a
-- filtered list read the page's rows rather than walking every ticket of
-- the customer filtering (a rep with one ticket in 50 read 1,000 rows for a
-- page of 20). The new indexes begin with the old ones' columns, which
-- they replace (the counts of these filters still read the index alone).
CREATE INDEX tickets_channel_created_idx  ON tickets (customer_id, channel_id, created_at DESC, ticket_id DESC);
CREATE INDEX tickets_rep_created_idx      ON tickets (customer_id, customer_rep_id, created_at DESC, ticket_id DESC)
    WHERE customer_rep_id IS NOT NULL;
CREATE INDEX tickets_end_user_created_idx ON tickets (customer_id, end_user_id, created_at DESC, ticket_id DESC);
CREATE INDEX tickets_status_created_idx   ON tickets (customer_id, status, created_at DESC, ticket_id DESC);
DROP INDEX tickets_channel_idx;
DROP INDEX tickets_rep_idx;
DROP INDEX tickets_end_user_idx;
DROP INDEX tickets_status_idx;
