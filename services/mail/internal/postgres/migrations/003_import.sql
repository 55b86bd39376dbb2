-- The import worker's state per folder: the delta link of the folder's next
-- delta round (written only after every mail of a round was handed on), the
-- import request counter behind the "one more run" rule, and the outcome of
-- the last import.
ALTER TABLE channel_folders
    ADD COLUMN delta_link          text        CHECK (delta_link IS NULL OR length(delta_link) <= 8192),
    -- The mailbox and provider folder id the link was made for: a folder
    -- pointed at another provider folder, or a channel given another
    -- mailbox, starts afresh instead of following a stranger's link.
    ADD COLUMN delta_link_source   text,
    ADD COLUMN delta_link_at       timestamptz,
    -- Bumped by every import request before it tries the folder's import
    -- lock; the lock holder runs once more while it changes.
    ADD COLUMN import_requests     bigint      NOT NULL DEFAULT 0,
    ADD COLUMN import_requested_at timestamptz,
    ADD COLUMN last_import_error   text        NOT NULL DEFAULT '' CHECK (length(last_import_error) <= 1000),
    ADD COLUMN imported_total      bigint      NOT NULL DEFAULT 0;
