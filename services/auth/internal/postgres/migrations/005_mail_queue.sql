-- auth's own transactional mail (password-reset link, password-changed
-- notice), queued in the transaction of the change it announces and worked
-- by the service's sender loop (internal/mail). The reset link holds the raw
-- token, so it lives here only while the mail is pending or being sent; the
-- check keeps it from outliving that.
CREATE TABLE mail_queue (
    mail_id         bigserial PRIMARY KEY,
    account_id      bigint      REFERENCES accounts ON DELETE CASCADE,
    kind            text        NOT NULL CHECK (kind IN ('password-reset', 'password-changed')),
    recipient       text        NOT NULL,
    name            text        NOT NULL DEFAULT '',
    language        text        NOT NULL DEFAULT '',
    link            text,
    expires_at      timestamptz,
    message_key     uuid        NOT NULL DEFAULT gen_random_uuid(),
    state           text        NOT NULL DEFAULT 'pending'
                    CHECK (state IN ('pending', 'sending', 'sent', 'failed', 'expired', 'unknown')),
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL,
    claimed_at      timestamptz,
    settled_at      timestamptz,
    last_error      text        NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL,
    CHECK (link IS NULL OR state IN ('pending', 'sending')),
    CHECK ((settled_at IS NULL) = (state IN ('pending', 'sending')))
);
CREATE INDEX mail_queue_due_idx ON mail_queue (next_attempt_at) WHERE state = 'pending';
CREATE INDEX mail_queue_sending_idx ON mail_queue (claimed_at) WHERE state = 'sending';
CREATE INDEX mail_queue_settled_idx ON mail_queue (settled_at) WHERE settled_at IS NOT NULL;
CREATE INDEX mail_queue_account_idx ON mail_queue (account_id);

-- The language an account's mail is written in (ISO 639-1); NULL: English.
ALTER TABLE accounts ADD COLUMN language text CHECK (language ~ '^[a-z]{2}$');
