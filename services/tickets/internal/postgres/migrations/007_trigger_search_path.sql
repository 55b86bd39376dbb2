-- Like ticket_counts_apply, the attachments trigger keeps this schema's
-- search_path: an attachment deleted from a session with another
-- search_path (an administrator's, by a ticket's cascade) still queues its
-- bytes in this schema's blob_garbage.
ALTER FUNCTION attachments_collect_blob() SET search_path FROM CURRENT;
