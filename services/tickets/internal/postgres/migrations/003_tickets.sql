-- Tickets, their messages, the topics on messages, attachments, feedback
-- and escalation comments. Before this migration no API wrote tickets, so
-- the new NOT NULL columns need no defaults for old rows.

ALTER TABLE tickets
    ADD COLUMN channel_id      bigint      NOT NULL,
    ADD COLUMN customer_rep_id bigint,
    ADD COLUMN custom_fields   jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(custom_fields) = 'object'),
    -- The credential of the public feedback link (random, 256 bits).
    ADD COLUMN ticket_token    text        NOT NULL UNIQUE,
    ADD COLUMN updated_at      timestamptz NOT NULL DEFAULT now(),
    -- Full-text search of the subject (the messages have their own): each
    -- text is indexed twice, with the text search configuration of its
    -- detected language (stemmed) and with 'simple' (exact words), so a
    -- query matches whether or not its own language is recognised.
    ADD COLUMN search          tsvector    NOT NULL DEFAULT ''::tsvector,
    ADD CONSTRAINT tickets_customer_key UNIQUE (customer_id, ticket_id);

ALTER TABLE tickets ALTER COLUMN status DROP DEFAULT;
UPDATE tickets SET status = initcap(status);
ALTER TABLE tickets ADD CONSTRAINT tickets_status_check
    CHECK (status IN ('Open', 'Pending', 'Escalated', 'Resolved', 'Closed'));

-- The list's filters and sorts, all within one customer.
CREATE INDEX tickets_created_idx ON tickets (customer_id, created_at DESC, ticket_id DESC);
CREATE INDEX tickets_updated_idx ON tickets (customer_id, updated_at DESC, ticket_id DESC);
CREATE INDEX tickets_status_idx  ON tickets (customer_id, status, created_at DESC);
CREATE INDEX tickets_channel_idx ON tickets (customer_id, channel_id);
CREATE INDEX tickets_rep_idx     ON tickets (customer_id, customer_rep_id) WHERE customer_rep_id IS NOT NULL;
CREATE INDEX tickets_search_idx  ON tickets USING gin (search);

CREATE TABLE ticket_messages (
    message_id        bigserial   PRIMARY KEY,
    customer_id       bigint      NOT NULL,
    ticket_id         bigint      NOT NULL,
    sender_type       text        NOT NULL CHECK (sender_type IN ('EndUser', 'Agent', 'AI', 'System')),
    sender_account_id bigint,
    message           text        NOT NULL,
    -- The PostgreSQL text search configuration of the message's detected
    -- language ('simple' when none was recognised).
    search_config     regconfig   NOT NULL DEFAULT 'simple',
    -- The text indexed like the ticket's subject (the first 100,000
    -- characters).
    search            tsvector    NOT NULL DEFAULT ''::tsvector,
    custom_fields     jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(custom_fields) = 'object'),
    ai_reply_text     text,
    ai_reply_status   text        NOT NULL DEFAULT 'none'
        CHECK (ai_reply_status IN ('none', 'pending', 'prepared', 'sent', 'modified')),
    ai_reply_at       timestamptz,
    is_escalated      boolean     NOT NULL DEFAULT false,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT ticket_messages_ticket_fkey FOREIGN KEY (customer_id, ticket_id)
        REFERENCES tickets (customer_id, ticket_id) ON DELETE CASCADE,
    CONSTRAINT ticket_messages_customer_key UNIQUE (customer_id, message_id)
);

CREATE INDEX ticket_messages_ticket_idx ON ticket_messages (ticket_id, created_at, message_id);
CREATE INDEX ticket_messages_search_idx ON ticket_messages USING gin (search);

-- Topic names as this service knows them: written when a topic is first
-- assigned (asked of topics over NATS) and kept current by the topic.updated
-- and topic.deleted events.
CREATE TABLE topic_names (
    customer_id bigint      NOT NULL,
    topic_id    bigint      NOT NULL,
    name        text        NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (customer_id, topic_id)
);

CREATE TABLE message_topics (
    ticket_message_topic_id bigserial   PRIMARY KEY,
    customer_id             bigint      NOT NULL,
    message_id              bigint      NOT NULL,
    topic_id                bigint      NOT NULL,
    created_at              timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT message_topics_message_fkey FOREIGN KEY (customer_id, message_id)
        REFERENCES ticket_messages (customer_id, message_id) ON DELETE CASCADE,
    CONSTRAINT message_topics_topic_fkey FOREIGN KEY (customer_id, topic_id)
        REFERENCES topic_names (customer_id, topic_id) ON DELETE CASCADE,
    UNIQUE (message_id, topic_id)
);

CREATE INDEX message_topics_topic_idx ON message_topics (customer_id, topic_id);

-- Escalation comments of a ticket's messages (the ticket's aiFeedbackComments).
CREATE TABLE feedback_comments (
    comment_id  bigserial   PRIMARY KEY,
    customer_id bigint      NOT NULL,
    ticket_id   bigint      NOT NULL,
    message_id  bigint      NOT NULL,
    comment     text        NOT NULL,
    email       text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT feedback_comments_message_fkey FOREIGN KEY (customer_id, message_id)
        REFERENCES ticket_messages (customer_id, message_id) ON DELETE CASCADE
);

CREATE INDEX feedback_comments_ticket_idx ON feedback_comments (ticket_id, created_at);

-- The end user's vote on a message (through the ticket token): one per
-- message, the last one counts.
CREATE TABLE message_votes (
    message_id  bigint      PRIMARY KEY,
    customer_id bigint      NOT NULL,
    vote        text        NOT NULL CHECK (vote IN ('like', 'dislike')),
    voted_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT message_votes_message_fkey FOREIGN KEY (customer_id, message_id)
        REFERENCES ticket_messages (customer_id, message_id) ON DELETE CASCADE
);

-- Attachment metadata; the bytes are in the blob store under object_key.
CREATE TABLE attachments (
    attachment_id bigserial   PRIMARY KEY,
    customer_id   bigint      NOT NULL,
    message_id    bigint      NOT NULL,
    file_name     text        NOT NULL,
    content_type  text        NOT NULL,
    size          bigint      NOT NULL CHECK (size >= 0),
    sha256        text        NOT NULL,
    object_key    text        NOT NULL UNIQUE,
    created_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT attachments_message_fkey FOREIGN KEY (customer_id, message_id)
        REFERENCES ticket_messages (customer_id, message_id) ON DELETE CASCADE
);

CREATE INDEX attachments_message_idx ON attachments (message_id);

-- Blobs whose metadata is gone (an attachment, message or ticket was
-- deleted): a row is written by a trigger in the deleting transaction, and
-- the service deletes the bytes from the blob store afterwards and then the
-- row. Bytes are never deleted for a deletion that rolled back, and never
-- forgotten when the blob store is down at commit time.
CREATE TABLE blob_garbage (
    object_key text        PRIMARY KEY,
    queued_at  timestamptz NOT NULL DEFAULT now()
);

CREATE FUNCTION attachments_collect_blob() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO blob_garbage (object_key) VALUES (OLD.object_key) ON CONFLICT DO NOTHING;
    RETURN OLD;
END $$;

CREATE TRIGGER attachments_collect_blob AFTER DELETE ON attachments
    FOR EACH ROW EXECUTE FUNCTION attachments_collect_blob();
