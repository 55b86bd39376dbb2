-- The AI assistant (issue 11): where a message's topics came from, the
-- provenance of its prepared reply, and the cached ticket summaries.
ALTER TABLE ticket_messages
    -- Who set the message's current topics: 'manual' (PUT .../topics) or
    -- 'auto' (the assistant's detection); null while it never had any. An
    -- automatic result never replaces topics set manually.
    ADD COLUMN topics_source            text CHECK (topics_source IN ('manual', 'auto')),
    -- What prepared ai_reply_text: the engine ('offline',
    -- 'openai-compatible') and its model; null for a reply an agent wrote
    -- through PATCH and for none.
    ADD COLUMN ai_reply_engine          text,
    ADD COLUMN ai_reply_model           text,
    -- The prompt documents the reply was grounded in, best first:
    -- [{documentID, title, content, score}].
    ADD COLUMN ai_reply_documents       jsonb,
    -- The Agent message send-reply made of the reply (votes on it are
    -- feedback on the reply).
    ADD COLUMN ai_reply_sent_message_id bigint;

-- The feedback report reads the replies an engine prepared in a window.
CREATE INDEX ticket_messages_ai_reply_idx ON ticket_messages (customer_id, ai_reply_at)
    WHERE ai_reply_engine IS NOT NULL;

-- One cached summary per ticket, valid while the ticket's newest message
-- and status are the ones it was computed for.
CREATE TABLE ticket_summaries (
    customer_id     bigint      NOT NULL,
    ticket_id       bigint      NOT NULL,
    -- The newest message the summary covers (0: the ticket had none).
    last_message_id bigint      NOT NULL,
    status          text        NOT NULL,
    summary         text        NOT NULL,
    engine          text        NOT NULL,
    model           text        NOT NULL,
    created_at      timestamptz NOT NULL,
    PRIMARY KEY (customer_id, ticket_id),
    CONSTRAINT ticket_summaries_ticket_fkey FOREIGN KEY (customer_id, ticket_id)
        REFERENCES tickets (customer_id, ticket_id) ON DELETE CASCADE
);
