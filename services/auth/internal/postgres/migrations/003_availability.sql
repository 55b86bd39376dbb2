-- Whether the account's person is available to answer tickets, set by the
-- account itself; available_changed_at is when the value last changed (NULL
-- while it never has).
ALTER TABLE accounts
    ADD COLUMN available            boolean NOT NULL DEFAULT false,
    ADD COLUMN available_changed_at timestamptz;
