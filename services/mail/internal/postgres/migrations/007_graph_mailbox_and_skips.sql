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
-- resolved again.
ALTER TABLE channels
    ADD COLUMN provider_user_address        text CHECK (provider_user_address IS NULL OR length(provider_user_address) <= 320),
    ADD COLUMN provider_user_id             text CHECK (provider_user_id IS NULL OR length(provider_user_id) BETWEEN 1 AND 200),
    ADD COLUMN provider_user_principal_name text CHECK (provider_user_principal_name IS NULL OR length(provider_user_principal_name) <= 320);

-- Notifications and lifecycle events may name the mailbox by that id.
CREATE INDEX channels_provider_user_idx ON channels (lower(provider_user_id)) WHERE provider_user_id IS NOT NULL;
