-- Mails a folder's import could not import and skipped for good (over the
-- 16 MiB reply cap or the stream's payload limit, refused by Graph with a
-- lasting 4xx, unreadable): counted on the folder with the last one's
-- reason, so that an admin sees them on the folder's API answer. The round
-- goes on without them and stores its delta link.
ALTER TABLE channel_folders
    ADD COLUMN skipped_messages bigint      NOT NULL DEFAULT 0,
    ADD COLUMN last_skip_reason text        NOT NULL DEFAULT '' CHECK (length(last_skip_reason) <= 1000),
    ADD COLUMN last_skip_at     timestamptz;
