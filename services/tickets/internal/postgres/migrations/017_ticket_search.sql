-- Issue 26: a search planned once per connection, never compiled by JIT.
--
-- The matches of a search (listQueries): the customer's tickets whose
-- subject or a message matches both readings of the query (the words as
-- written, 'simple', or stemmed in the query's language, config). Inline in
-- the search statement, they were planned for every request (an unnamed
-- statement, for its words' selectivity): parsing and planning were 0.29
-- of the statement's 0.75 ms at 100,000 tickets (EXPLAIN SUMMARY). And the
-- messages' scan was costed for a word the statistics do not know at 0.5%
-- of all messages (PostgreSQL's default selectivity), 159,000 at 6.3
-- million messages (make bench-scale at 1,000,000 tickets beside 99
-- customers of 10,000): past jit_above_cost (100,000), so every search was
-- compiled by LLVM first, 15-20 ms of a statement that runs in 3 (EXPLAIN
-- ANALYZE: JIT 31 functions, Emission 17.9 ms; jit off: 2.5-3.5 ms at
-- 1,000,000 tickets, 2.2-2.9 at 10,000).
--
-- Here the statement keeps one generic plan per connection: whatever the
-- words, it is a bitmap scan of each GIN index (a rare word's custom plan
-- is the same; a word in most tickets is a count of most tickets either
-- way), and JIT is off (a plan of GIN bitmap scans never gains by it). The
-- customer condition of the GIN scans is written customer_id + 0 so that no
-- btree serves it: ANDed with the word's bitmap, the customer's whole range
-- of tickets_customer_key was read (make bench-scale: 7.6 ms at 10,000
-- tickets, 26 ms at 100,000). The messages' tickets are collected as an
-- array first, then ORed into the subjects' bitmap by key (one scan of the
-- tickets, no UNION to deduplicate: pgbench, a two-word query at 100,000
-- tickets, 0.44-0.49 ms against 0.56-0.62; as a join, the planner chose a
-- parallel hash join over every ticket of the customer). A message's ticket
-- is always its customer's (the foreign key). The filters' columns are
-- returned for the caller's WHERE. Names resolve in the caller's
-- search_path (the service's schema), as in its own statements.
CREATE FUNCTION ticket_search_matches(customer bigint, q text, config text)
    RETURNS TABLE (ticket_id bigint, created_at timestamptz, updated_at timestamptz, status text,
        channel_id bigint, end_user_id bigint, customer_rep_id bigint)
    LANGUAGE plpgsql STABLE
    SET jit = off SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
DECLARE
    query tsquery := websearch_to_tsquery('simple', q) || websearch_to_tsquery(config::regconfig, q);
BEGIN
    RETURN QUERY
    SELECT t.ticket_id, t.created_at, t.updated_at, t.status, t.channel_id, t.end_user_id, t.customer_rep_id
    FROM tickets t WHERE t.customer_id + 0 = customer AND (t.search @@ query OR t.ticket_id = ANY(ARRAY(
        SELECT m.ticket_id FROM ticket_messages m WHERE m.customer_id + 0 = customer AND m.search @@ query)));
END $$;
