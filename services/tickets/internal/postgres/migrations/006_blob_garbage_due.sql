-- When a blob_garbage row's bytes may be deleted. The rows the trigger
-- writes (an attachment deleted, directly or with its message or ticket)
-- are due at once: -infinity, whatever the service's clock says. An upload writes the row of its new key before it
-- streams the bytes, due a little after REQUEST_TIMEOUT, and deletes it in
-- the transaction that stores the attachment's metadata: the bytes of an
-- upload that never got that far (a crash, NATS or PostgreSQL gone) are
-- collected by the sweeper.
ALTER TABLE blob_garbage ADD COLUMN not_before timestamptz NOT NULL DEFAULT '-infinity';

CREATE INDEX blob_garbage_due_idx ON blob_garbage (not_before);
