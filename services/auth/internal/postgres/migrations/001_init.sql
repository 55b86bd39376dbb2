CREATE TABLE customers (
    customer_id bigserial PRIMARY KEY,
    name        text        NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    created_at  timestamptz NOT NULL DEFAULT now(),
    deleted_at  timestamptz
);

CREATE TABLE accounts (
    account_id          bigserial PRIMARY KEY,
    customer_id         bigint      NOT NULL REFERENCES customers ON DELETE CASCADE,
    email               text        NOT NULL,
    name                text        NOT NULL DEFAULT '',
    role                text        NOT NULL CHECK (role IN ('admin', 'agent', 'integration')),
    password_hash       text        NOT NULL,
    password_changed_at timestamptz NOT NULL DEFAULT now(),
    created_at          timestamptz NOT NULL DEFAULT now(),
    disabled_at         timestamptz
);
-- Login identities are global: one e-mail address logs into one account.
CREATE UNIQUE INDEX accounts_email_key ON accounts (lower(email));
CREATE INDEX accounts_customer_idx ON accounts (customer_id, account_id);

CREATE TABLE password_resets (
    reset_id   bigserial PRIMARY KEY,
    account_id bigint      NOT NULL REFERENCES accounts ON DELETE CASCADE,
    token_hash bytea       NOT NULL UNIQUE,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);
CREATE INDEX password_resets_account_idx ON password_resets (account_id);
