-- An action that needs a human: never fired by the assistant's topic
-- detection alone, only when an agent assigns or confirms the topic
-- (services/topics/README.md).
ALTER TABLE actions ADD COLUMN requires_confirmation boolean NOT NULL DEFAULT false;
