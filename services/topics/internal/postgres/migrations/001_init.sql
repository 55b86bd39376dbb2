-- The topics schema. Every table carries customer_id; the mapping tables
-- reference their topic, action and document through (customer_id, id) so a
-- mapping can never link two tenants' records.

CREATE TABLE actions (
    action_id   bigserial PRIMARY KEY,
    customer_id bigint      NOT NULL CHECK (customer_id > 0),
    name        text        NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    hook_name   text        NOT NULL CHECK (length(hook_name) BETWEEN 1 AND 200),
    channel_id  bigint      CHECK (channel_id > 0),
    is_active   boolean     NOT NULL DEFAULT true,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT actions_customer_key UNIQUE (customer_id, action_id)
);

CREATE TABLE documents (
    document_id bigserial PRIMARY KEY,
    customer_id bigint      NOT NULL CHECK (customer_id > 0),
    title       text        NOT NULL CHECK (length(title) BETWEEN 1 AND 300),
    content     text        NOT NULL DEFAULT '' CHECK (length(content) <= 100000),
    channel_id  bigint      CHECK (channel_id > 0),
    hook_name   text        NOT NULL DEFAULT '' CHECK (length(hook_name) <= 200),
    is_hook     boolean     NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT documents_customer_key UNIQUE (customer_id, document_id)
);

-- Topics are soft-deleted (deleted_at): tickets keep referring to their ids,
-- and every read joins on deleted_at IS NULL, so a deleted topic and all its
-- mappings match nothing.
CREATE TABLE topics (
    topic_id    bigserial PRIMARY KEY,
    customer_id bigint      NOT NULL CHECK (customer_id > 0),
    name        text        NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    description text        NOT NULL DEFAULT '' CHECK (length(description) <= 2000),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    deleted_at  timestamptz,
    CONSTRAINT topics_customer_key UNIQUE (customer_id, topic_id)
);
-- One live topic per name and customer, ignoring case and outer spaces.
CREATE UNIQUE INDEX topics_name_key ON topics (customer_id, lower(btrim(name))) WHERE deleted_at IS NULL;
CREATE INDEX topics_live_idx ON topics (customer_id, topic_id) WHERE deleted_at IS NULL;

CREATE TABLE topic_actions (
    topic_action_id bigserial PRIMARY KEY,
    customer_id     bigint      NOT NULL,
    topic_id        bigint      NOT NULL,
    action_id       bigint      NOT NULL,
    priority        integer     NOT NULL CHECK (priority BETWEEN 0 AND 10000),
    is_active       boolean     NOT NULL DEFAULT true,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT topic_actions_topic_fkey FOREIGN KEY (customer_id, topic_id) REFERENCES topics (customer_id, topic_id) ON DELETE CASCADE,
    CONSTRAINT topic_actions_action_fkey FOREIGN KEY (customer_id, action_id) REFERENCES actions (customer_id, action_id) ON DELETE CASCADE,
    CONSTRAINT topic_actions_pair_key UNIQUE (topic_id, action_id)
);
CREATE INDEX topic_actions_topic_idx ON topic_actions (customer_id, topic_id, priority, topic_action_id);
CREATE INDEX topic_actions_action_idx ON topic_actions (customer_id, action_id);

CREATE TABLE topic_documents (
    topic_document_id bigserial PRIMARY KEY,
    customer_id       bigint      NOT NULL,
    topic_id          bigint      NOT NULL,
    document_id       bigint      NOT NULL,
    relevance_score   integer     NOT NULL CHECK (relevance_score BETWEEN 0 AND 100),
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT topic_documents_topic_fkey FOREIGN KEY (customer_id, topic_id) REFERENCES topics (customer_id, topic_id) ON DELETE CASCADE,
    CONSTRAINT topic_documents_document_fkey FOREIGN KEY (customer_id, document_id) REFERENCES documents (customer_id, document_id) ON DELETE CASCADE,
    CONSTRAINT topic_documents_pair_key UNIQUE (topic_id, document_id)
);
CREATE INDEX topic_documents_topic_idx ON topic_documents (customer_id, topic_id, relevance_score DESC);
CREATE INDEX topic_documents_document_idx ON topic_documents (customer_id, document_id);

-- url_pattern is stored normalised (lower-case scheme and host, no default
-- port, no fragment) so lookups compare strings.
CREATE TABLE page_topic_mappings (
    page_topic_mapping_id bigserial PRIMARY KEY,
    customer_id           bigint      NOT NULL,
    topic_id              bigint      NOT NULL,
    url_pattern           text        NOT NULL CHECK (length(url_pattern) BETWEEN 1 AND 2048),
    match_type            text        NOT NULL CHECK (match_type IN ('exact', 'prefix')),
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT page_topic_mappings_topic_fkey FOREIGN KEY (customer_id, topic_id) REFERENCES topics (customer_id, topic_id) ON DELETE CASCADE,
    CONSTRAINT page_topic_mappings_pattern_key UNIQUE (topic_id, match_type, url_pattern)
);
CREATE INDEX page_topic_mappings_lookup_idx ON page_topic_mappings (customer_id, match_type, url_pattern);
CREATE INDEX page_topic_mappings_topic_idx ON page_topic_mappings (customer_id, topic_id);
