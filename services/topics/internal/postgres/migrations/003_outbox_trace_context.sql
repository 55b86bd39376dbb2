-- The W3C trace context (traceparent, tracestate) of the request or message
-- that wrote an outbox row: the relay publishes the event under it, so the
-- writer's trace continues into the event's consumers (pkg/outbox). NULL
-- when the writer had none.
ALTER TABLE outbox
    ADD COLUMN traceparent text,
    ADD COLUMN tracestate  text;
