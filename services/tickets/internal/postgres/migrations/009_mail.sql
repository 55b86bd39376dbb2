-- Messages made from imported mail, and the delivery state of agent
-- replies sent by mail. Both are null on every other message.
ALTER TABLE ticket_messages
    -- The channel (mailbox) the mail came in through and the provider's
    -- immutable id of the mail: a mail is imported once per channel.
    ADD COLUMN mail_channel_id     bigint,
    ADD COLUMN provider_message_id text,
    -- Threading: the mail's Message-ID (with its angle brackets), the
    -- provider's thread id and the Message-ID the mail answers.
    ADD COLUMN internet_message_id text,
    ADD COLUMN conversation_id     text,
    ADD COLUMN in_reply_to         text,
    ADD COLUMN mail_from_name      text,
    ADD COLUMN mail_from_address   text,
    -- [{name, address}]
    ADD COLUMN mail_to             jsonb,
    ADD COLUMN mail_cc             jsonb,
    ADD COLUMN mail_subject        text,
    ADD COLUMN mail_received_at    timestamptz,
    -- The HTML body, sanitised ("" for a plain-text mail).
    ADD COLUMN body_html           text,
    -- The import worker or this service cut the text or HTML body.
    ADD COLUMN mail_truncated      boolean,
    -- Attachments that were not stored: [{name, size, reason}]
    ADD COLUMN mail_skipped        jsonb,
    -- An agent reply's delivery by mail: pending from send-reply (tickets
    -- of e-mail channels), then sent or failed as the mail context reports;
    -- delivery_updated_at is the occurredAt of the newest report applied.
    ADD COLUMN delivery_status     text CHECK (delivery_status IN ('pending', 'sent', 'failed')),
    ADD COLUMN delivery_attempts   integer NOT NULL DEFAULT 0,
    ADD COLUMN delivery_error      text,
    ADD COLUMN delivery_updated_at timestamptz,
    ADD CONSTRAINT ticket_messages_mail_check CHECK ((provider_message_id IS NULL) = (mail_channel_id IS NULL));

-- Idempotency of the import: a redelivered or duplicated mail is refused.
CREATE UNIQUE INDEX ticket_messages_mail_key ON ticket_messages (customer_id, mail_channel_id, provider_message_id)
    WHERE provider_message_id IS NOT NULL;

-- The threading lookups: In-Reply-To/References, then conversationId.
CREATE INDEX ticket_messages_internet_id_idx ON ticket_messages (customer_id, internet_message_id)
    WHERE internet_message_id IS NOT NULL;
CREATE INDEX ticket_messages_conversation_idx ON ticket_messages (customer_id, mail_channel_id, conversation_id)
    WHERE conversation_id IS NOT NULL;
