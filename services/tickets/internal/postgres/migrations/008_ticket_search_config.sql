-- The text search configuration of the ticket's conversation: the language
-- of its subject at first, then of its latest end-user message that was
-- recognised. Messages of agents, the AI and the system are indexed with it
-- instead of running language detection on each (detection costs about a
-- third of a millisecond of CPU, and an answer is in the asker's language).
ALTER TABLE tickets ADD COLUMN search_config regconfig NOT NULL DEFAULT 'simple';

UPDATE tickets t SET search_config = m.search_config
FROM (SELECT DISTINCT ON (ticket_id) ticket_id, search_config FROM ticket_messages
      WHERE sender_type = 'EndUser' AND search_config <> 'simple'::regconfig
      ORDER BY ticket_id, created_at DESC, message_id DESC) m
WHERE m.ticket_id = t.ticket_id;
