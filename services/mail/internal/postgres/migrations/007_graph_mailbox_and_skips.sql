-- Mails a folder's import could not import and skipped for good (over the
-- 16 MiB reply cap or the stream's payload limit, refused by Graph with a
-- lasting 4xx, unreadable): counted on the folder with the last one's
-- reason, so that an admin sees them on the folder's API answer. The round
-- goes on without them and stores its delta link.
ALTER TABLE channel_folders
    ADD COLUMN skipped_messages bigint      NOT NULL DEFAULT 0,
    ADD COLUMN last_skip_reason text        NOT NULL DEFAULT '' CHECK (length(last_skip_reason) <= 1000),
    ADD COLUMN last_skip_at     timestamptz;

-- The Microsoft Graph user behind a channel's mailbox address: Graph's mail
-- paths and subscription resources take only the user's id or
-- userPrincipalName (an alias fails with 404 ErrorInvalidUser), so the
-- address is resolved once and the id used everywhere. Kept with the
-- address it was resolved for: a channel given another address is
-- resolved again. A table of its own, without a foreign key, because it is
-- written while a folder's row is locked: a write to channels (or a foreign
-- key's lock on it) would wait for a toggle that holds the channel's row
-- and waits for that folder, a cycle across two connections that
-- PostgreSQL cannot see.
CREATE TABLE mailbox_users (
    customer_id         bigint      NOT NULL,
    channel_id          bigint      NOT NULL,
    address             text        NOT NULL CHECK (length(address) BETWEEN 1 AND 320),
    user_id             text        NOT NULL CHECK (length(user_id) BETWEEN 1 AND 200),
    user_principal_name text        NOT NULL DEFAULT '' CHECK (length(user_principal_name) <= 320),
    resolved_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (customer_id, channel_id)
);

-- Notifications and lifecycle events may name the mailbox by that id.
CREATE INDEX mailbox_users_user_idx ON mailbox_users (lower(user_id));
