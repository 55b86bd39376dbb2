-- Autovacuum settings of the tables whose rows change most. PostgreSQL's
-- default waits for 20% of a table to be dead rows: on a large tickets
-- table that is millions of dead versions, and since each message updates
-- its ticket's updated_at (an indexed column, so never a HOT update), every
-- one of them stays in all the tickets indexes until a vacuum, where the list
-- and search queries step over them (make soak without any vacuum: the
-- tickets routes stall after 4-5 minutes at 500 req/s). The counters and
-- the outbox are small tables rewritten all the time: a fixed threshold.
ALTER TABLE tickets SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.05);
ALTER TABLE ticket_counts SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000);
ALTER TABLE outbox SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000);
