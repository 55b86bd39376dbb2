-- The transactional outbox (pkg/outbox): events written in the transaction
-- of the change they announce, relayed to JetStream by the running service.
CREATE TABLE outbox (seq bigserial PRIMARY KEY, event_id text NOT NULL UNIQUE,
    subject text NOT NULL, data bytea NOT NULL, request_id text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now());
