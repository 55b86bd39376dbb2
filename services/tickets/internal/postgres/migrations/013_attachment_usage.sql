-- Bytes of attachments per customer, for the attachment storage quota
-- (ATTACHMENT_QUOTA_BYTES). Statement-level triggers on attachments keep
-- it exact on every path (an upload, a mail's attachments, a deletion of
-- an attachment, its message or its ticket by cascade). The store checks
-- the quota after inserting the metadata, in the same transaction: the
-- trigger's update holds the customer's row until the commit, so two
-- uploads of one customer cannot both squeeze into the last free bytes.
CREATE TABLE attachment_usage (
    customer_id bigint PRIMARY KEY,
    bytes       bigint NOT NULL DEFAULT 0 CHECK (bytes >= 0)
);

CREATE FUNCTION attachment_usage_apply() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO attachment_usage AS u (customer_id, bytes)
        SELECT customer_id, sum(size) FROM new_rows GROUP BY customer_id ORDER BY customer_id
        ON CONFLICT (customer_id) DO UPDATE SET bytes = u.bytes + EXCLUDED.bytes;
    ELSE
        UPDATE attachment_usage u SET bytes = u.bytes - g.n
        FROM (SELECT customer_id, sum(size) AS n FROM old_rows GROUP BY customer_id) g
        WHERE u.customer_id = g.customer_id;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER attachment_usage_insert AFTER INSERT ON attachments
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION attachment_usage_apply();
CREATE TRIGGER attachment_usage_delete AFTER DELETE ON attachments
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION attachment_usage_apply();

-- The attachments stored before the triggers existed; no writer may slip
-- in between the sum and the triggers' commit.
LOCK TABLE attachments IN SHARE MODE;
INSERT INTO attachment_usage (customer_id, bytes)
SELECT customer_id, sum(size) FROM attachments GROUP BY customer_id;
