-- End users: the customer's own customers. The e-mail address is optional,
-- stored in lower case, and unique within the customer when present (the
-- mail import finds end users by address).
CREATE TABLE end_users (
    end_user_id   bigserial   PRIMARY KEY,
    customer_id   bigint      NOT NULL,
    name          text        NOT NULL CHECK (name <> ''),
    email         text        CHECK (email = lower(email) AND email <> ''),
    phone         text        CHECK (phone <> ''),
    language      text        CHECK (language <> ''),
    custom_fields jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(custom_fields) = 'object'),
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    -- The target of the tickets' foreign key, which keeps a ticket within
    -- its end user's customer.
    CONSTRAINT end_users_customer_key UNIQUE (customer_id, end_user_id)
);

CREATE UNIQUE INDEX end_users_email_key ON end_users (customer_id, email) WHERE email IS NOT NULL;

-- Tickets (the rest of their columns come with the Tickets API). An end
-- user with tickets cannot be deleted.
CREATE TABLE tickets (
    ticket_id   bigserial   PRIMARY KEY,
    customer_id bigint      NOT NULL,
    end_user_id bigint      NOT NULL,
    subject     text        NOT NULL,
    status      text        NOT NULL DEFAULT 'open',
    created_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT tickets_end_user_fkey FOREIGN KEY (customer_id, end_user_id)
        REFERENCES end_users (customer_id, end_user_id) ON DELETE RESTRICT
);

CREATE INDEX tickets_end_user_idx ON tickets (customer_id, end_user_id);
