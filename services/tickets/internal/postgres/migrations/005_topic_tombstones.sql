-- A deleted topic keeps its topic_names row as a tombstone (deleted_at set;
-- its message_topics rows are deleted with it). Without one, an assignment
-- that asked topics for the names just before the topic was deleted, and
-- committed just after topic.deleted was handled, would put the deleted
-- topic back on the message for good. Tombstones are never assigned, never
-- renamed, and match no message (no message_topics row refers to them).
ALTER TABLE topic_names ADD COLUMN deleted_at timestamptz;
