-- Agents' replies delivered by mail (package replier): one row per reply,
-- claimed before the provider is called, so that a reply is sent at most
-- once however often its event is delivered and however many import
-- workers run.
CREATE TABLE sent_replies (
    customer_id     bigint      NOT NULL CHECK (customer_id > 0),
    -- The agent's message in the tickets context.
    message_id      bigint      NOT NULL CHECK (message_id > 0),
    ticket_id       bigint      NOT NULL,
    channel_id      bigint      NOT NULL,
    -- <customerID>.<messageID>: the value of the X-SupportPlatform-Reply
    -- header of the mail, by which it is found in the mailbox's Sent Items.
    idempotency_key text        NOT NULL UNIQUE,
    -- pending: not sent yet (first delivery, or waiting for a retry);
    -- sending: handed to the provider by attempt `attempts` until
    -- lease_until; sent, failed, skipped: final.
    status          text        NOT NULL DEFAULT 'pending'
                                CHECK (status IN ('pending', 'sending', 'sent', 'failed', 'skipped')),
    attempts        integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_error      text        NOT NULL DEFAULT '',
    -- How it went out: reply (to the end user's mail) or sendMail.
    method          text        NOT NULL DEFAULT '' CHECK (method IN ('', 'reply', 'sendMail')),
    lease_until     timestamptz,
    next_attempt_at timestamptz,
    sent_at         timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (customer_id, message_id),
    CONSTRAINT sent_replies_lease CHECK (status <> 'sending' OR lease_until IS NOT NULL)
);
-- What an operator looks at: replies in flight or given up.
CREATE INDEX sent_replies_attention_idx ON sent_replies (status, updated_at) WHERE status IN ('sending', 'failed');
