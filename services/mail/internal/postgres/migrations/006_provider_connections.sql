-- Microsoft 365 tenants bound to their customer (issue 22). A customer's
-- admin connects an Entra tenant by signing its Microsoft admin in (OpenID
-- Connect) and having that admin grant the app admin consent; only then
-- may the customer's microsoft365 channels name the tenant, and only then
-- does the platform take app-only tokens for it on the customer's behalf.

CREATE TABLE provider_connections (
    connection_id bigserial   PRIMARY KEY,
    customer_id   bigint      NOT NULL CHECK (customer_id > 0),
    provider      text        NOT NULL DEFAULT 'microsoft365' CHECK (provider IN ('microsoft365')),
    -- pending: started, the Microsoft admin has not signed in yet;
    -- consenting: signed in (tenant_id is the verified tid), admin consent
    -- asked; connected: consent given for tenant_id; failed: the attempt
    -- ended with last_error (nothing was connected).
    status        text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'consenting', 'connected', 'failed')),
    -- The Entra tenant GUID (lower-case) from the verified id_token's tid.
    tenant_id     text        CHECK (tenant_id IS NULL OR (tenant_id = lower(tenant_id) AND length(tenant_id) BETWEEN 1 AND 100)),
    -- Who signed in at Microsoft (preferred_username or name of the id_token).
    signed_in_as  text        NOT NULL DEFAULT '' CHECK (length(signed_in_as) <= 320),
    -- The platform admin account that started the connection.
    started_by    bigint      NOT NULL,
    last_error    text        NOT NULL DEFAULT '' CHECK (length(last_error) <= 1000),
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    connected_at  timestamptz,
    CONSTRAINT provider_connections_customer_key UNIQUE (customer_id, connection_id),
    CONSTRAINT provider_connections_tenant_required CHECK (status NOT IN ('consenting', 'connected') OR tenant_id IS NOT NULL)
);
-- One Entra tenant belongs to one customer.
CREATE UNIQUE INDEX provider_connections_tenant_key ON provider_connections (provider, tenant_id) WHERE status = 'connected';
CREATE INDEX provider_connections_list_idx ON provider_connections (customer_id, connection_id);

-- The OAuth state of a connection attempt in flight: stored as its SHA-256
-- only, single use (deleted when the redirect brings it back), short lived,
-- bound to the customer, the admin account that started it and the phase
-- it was issued for. signin rows hold the PKCE verifier and the nonce of
-- the OpenID Connect sign-in; consent rows the tenant the sign-in verified.
CREATE TABLE provider_connection_states (
    state_hash    bytea       PRIMARY KEY CHECK (length(state_hash) = 32),
    customer_id   bigint      NOT NULL,
    connection_id bigint      NOT NULL,
    account_id    bigint      NOT NULL,
    phase         text        NOT NULL CHECK (phase IN ('signin', 'consent')),
    code_verifier text        NOT NULL DEFAULT '',
    nonce         text        NOT NULL DEFAULT '',
    tenant_id     text        NOT NULL DEFAULT '',
    expires_at    timestamptz NOT NULL,
    CONSTRAINT provider_connection_states_connection_fkey FOREIGN KEY (customer_id, connection_id)
        REFERENCES provider_connections (customer_id, connection_id) ON DELETE CASCADE
);
CREATE INDEX provider_connection_states_expiry_idx ON provider_connection_states (expires_at);

-- Channels the upgrade (or a later rule) switched off, for operators and
-- the customer's admins to see why: channel_id, the reason, when.
CREATE TABLE channel_suspensions (
    channel_id   bigint      PRIMARY KEY,
    customer_id  bigint      NOT NULL,
    reason       text        NOT NULL,
    suspended_at timestamptz NOT NULL DEFAULT now()
);

-- The upgrade. No tenant is connected yet, so no existing microsoft365
-- channel may keep retrieving or sending mail: every live one is switched
-- off (its subscriptions retired, as switching off does) and listed. Its
-- admin connects the tenant and switches the channel on again.
INSERT INTO channel_suspensions (channel_id, customer_id, reason)
SELECT channel_id, customer_id, 'migration 006: its Microsoft 365 tenant is not connected to the customer'
FROM channels WHERE provider = 'microsoft365' AND NOT is_deleted;

-- A mailbox named by live microsoft365 channels of several customers:
-- the oldest channel keeps it; the others lose their provider (they stay,
-- readable, as channels without one) and are listed.
UPDATE channel_suspensions s SET reason = 'migration 006: mailbox ' || c.email_address
    || ' is also named by the older channel ' || o.first_id || ' of another customer; provider removed'
FROM channels c
JOIN LATERAL (SELECT min(channel_id) AS first_id FROM channels d
    WHERE d.email_address = c.email_address AND d.provider = 'microsoft365' AND NOT d.is_deleted) o ON true
WHERE s.channel_id = c.channel_id AND c.channel_id <> o.first_id;

INSERT INTO retired_subscriptions (provider_subscription_id, customer_id, provider_tenant_id)
SELECT f.provider_subscription_id, f.customer_id, c.provider_tenant_id
FROM channel_folders f JOIN channels c ON c.channel_id = f.channel_id
WHERE f.provider_subscription_id IS NOT NULL AND c.provider = 'microsoft365' AND NOT c.is_deleted
ON CONFLICT (provider_subscription_id) DO NOTHING;

UPDATE channel_folders f SET provider_subscription_id = NULL, provider_subscription_expiration = NULL,
    client_state = NULL, renew_requested_at = NULL, updated_at = now()
FROM channels c
WHERE c.channel_id = f.channel_id AND f.provider_subscription_id IS NOT NULL
  AND c.provider = 'microsoft365' AND NOT c.is_deleted;

UPDATE channels c SET auto_retrieve_emails = false, updated_at = now(),
    provider = CASE WHEN s.reason LIKE 'migration 006: mailbox %' THEN 'none' ELSE c.provider END,
    provider_tenant_id = CASE WHEN s.reason LIKE 'migration 006: mailbox %' THEN '' ELSE c.provider_tenant_id END
FROM channel_suspensions s WHERE s.channel_id = c.channel_id;

-- A mailbox is unique among the live microsoft365 channels of all
-- customers (the per-customer index stays for every provider).
CREATE UNIQUE INDEX channels_m365_mailbox_key ON channels (email_address)
    WHERE NOT is_deleted AND provider = 'microsoft365' AND email_address IS NOT NULL;
