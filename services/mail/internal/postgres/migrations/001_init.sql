-- The mail schema: channels (email, web, api), the provider folders of an
-- e-mail channel with their provider subscriptions, and subscriptions that
-- are to be deleted at the provider.

CREATE TABLE channels (
    channel_id           bigserial   PRIMARY KEY,
    customer_id          bigint      NOT NULL CHECK (customer_id > 0),
    name                 text        NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    kind                 text        NOT NULL CHECK (kind IN ('email', 'web', 'api')),
    -- Stored lower-case: mailbox addresses compare without case.
    email_address        text        CHECK (email_address IS NULL OR (length(email_address) BETWEEN 3 AND 320 AND email_address = lower(email_address))),
    provider             text        NOT NULL DEFAULT 'none' CHECK (provider IN ('microsoft365', 'none')),
    provider_tenant_id   text        NOT NULL DEFAULT '' CHECK (length(provider_tenant_id) <= 100),
    auto_retrieve_emails boolean     NOT NULL DEFAULT false,
    is_deleted           boolean     NOT NULL DEFAULT false,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    deleted_at           timestamptz,
    CONSTRAINT channels_customer_key UNIQUE (customer_id, channel_id),
    CONSTRAINT channels_email_required CHECK (kind <> 'email' OR email_address IS NOT NULL)
);
-- One live channel per mailbox and customer.
CREATE UNIQUE INDEX channels_email_key ON channels (customer_id, email_address) WHERE NOT is_deleted AND email_address IS NOT NULL;
CREATE INDEX channels_list_idx ON channels (customer_id, channel_id);
-- The callbacks' resource fallback finds folders by mailbox.
CREATE INDEX channels_mailbox_idx ON channels (email_address) WHERE NOT is_deleted;

CREATE TABLE channel_folders (
    folder_id                        bigserial   PRIMARY KEY,
    customer_id                      bigint      NOT NULL,
    channel_id                       bigint      NOT NULL,
    -- The provider's folder id or a well-known name such as inbox. Provider
    -- ids are case-sensitive.
    external_folder_id               text        NOT NULL CHECK (length(external_folder_id) BETWEEN 1 AND 512),
    display_name                     text        NOT NULL DEFAULT '' CHECK (length(display_name) <= 255),
    auto_retrieve_emails             boolean     NOT NULL DEFAULT false,
    provider_subscription_id         text        CHECK (provider_subscription_id IS NULL OR length(provider_subscription_id) BETWEEN 1 AND 200),
    provider_subscription_expiration timestamptz,
    -- The secret the provider echoes in every notification (clientState).
    client_state                     text        CHECK (client_state IS NULL OR length(client_state) <= 128),
    -- Set by a lifecycle event or an earlier failure: renew (or re-create)
    -- at the next renewal round whatever the expiry.
    renew_requested_at               timestamptz,
    last_notification_at             timestamptz,
    last_import_at                   timestamptz,
    created_at                       timestamptz NOT NULL DEFAULT now(),
    updated_at                       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT channel_folders_channel_fkey FOREIGN KEY (customer_id, channel_id) REFERENCES channels (customer_id, channel_id) ON DELETE CASCADE,
    CONSTRAINT channel_folders_external_key UNIQUE (channel_id, external_folder_id),
    CONSTRAINT channel_folders_customer_key UNIQUE (customer_id, folder_id)
);
CREATE UNIQUE INDEX channel_folders_subscription_key ON channel_folders (provider_subscription_id) WHERE provider_subscription_id IS NOT NULL;
CREATE INDEX channel_folders_expiry_idx ON channel_folders (provider_subscription_expiration) WHERE provider_subscription_id IS NOT NULL;
CREATE INDEX channel_folders_external_idx ON channel_folders (external_folder_id);

-- Subscriptions whose folder or channel went away, or was switched off, are
-- deleted at the provider after the change commits; what fails stays here
-- for the renewal job to retry.
CREATE TABLE retired_subscriptions (
    provider_subscription_id text        PRIMARY KEY,
    customer_id              bigint      NOT NULL,
    provider_tenant_id       text        NOT NULL,
    retired_at               timestamptz NOT NULL DEFAULT now(),
    attempts                 integer     NOT NULL DEFAULT 0,
    next_attempt_at          timestamptz NOT NULL DEFAULT now(),
    last_error               text        NOT NULL DEFAULT ''
);
