-- The transactional outbox (pkg/outbox): every change writes its events here
-- in its own transaction; the relay publishes them to JetStream afterwards.
CREATE TABLE outbox (
    seq        bigserial   PRIMARY KEY,
    event_id   text        NOT NULL UNIQUE,
    subject    text        NOT NULL,
    data       bytea       NOT NULL,
    request_id text        NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now()
);
