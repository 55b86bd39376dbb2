package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/services/tickets/internal/tickets"
)

// attachmentCols are an attachment's columns, named for attachmentRow.
const attachmentCols = `attachment_id, customer_id, message_id, file_name, content_type, size, sha256, object_key, created_at`

// attachmentRow is a row of attachmentCols.
type attachmentRow struct {
	ID          int64     `db:"attachment_id"`
	CustomerID  int64     `db:"customer_id"`
	MessageID   int64     `db:"message_id"`
	FileName    string    `db:"file_name"`
	ContentType string    `db:"content_type"`
	Size        int64     `db:"size"`
	SHA256      string    `db:"sha256"`
	Key         string    `db:"object_key"`
	CreatedAt   time.Time `db:"created_at"`
}

func (r attachmentRow) attachment() tickets.Attachment {
	return tickets.Attachment{ID: r.ID, CustomerID: r.CustomerID, MessageID: r.MessageID, FileName: r.FileName,
		ContentType: r.ContentType, Size: r.Size, SHA256: r.SHA256, Key: r.Key, CreatedAt: r.CreatedAt}
}

func messageNotFound() error { return apperr.E(apperr.NotFound, "message not found") }

// ReserveBlob lists key as garbage due at due, if the message is the
// customer's.
func (s *Store) ReserveBlob(ctx context.Context, customerID, messageID int64, key string, due time.Time) error {
	tag, err := s.db.Exec(ctx, `INSERT INTO blob_garbage (object_key, queued_at, not_before)
		SELECT $3, $5, $4 WHERE EXISTS (SELECT 1 FROM ticket_messages WHERE customer_id = $1 AND message_id = $2)`,
		customerID, messageID, key, due, s.now())
	if err != nil {
		return postgres.Error(err, "attachment")
	}
	if tag.RowsAffected() == 0 {
		return messageNotFound()
	}
	return nil
}

// AddAttachment stores the metadata and takes its key off the garbage
// list, in one transaction, if fits accepts the customer's attachment
// bytes with it (claimAttachments).
func (s *Store) AddAttachment(ctx context.Context, a tickets.Attachment, fits func(used, size int64) error) (tickets.Attachment, error) {
	var out tickets.Attachment
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		stored, err := s.claimAttachments(ctx, tx, a.CustomerID, a.MessageID, []tickets.Attachment{a}, fits)
		if err == nil {
			out = stored[0]
		}
		return err
	})
	if pe := attachmentMessageGone(err); pe != nil {
		return out, pe
	}
	return out, postgres.Error(err, "attachment")
}

// attachmentMessageGone: the message was deleted during the upload.
func attachmentMessageGone(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23503" && pe.ConstraintName == "attachments_message_fkey" {
		return apperr.Wrap(apperr.NotFound, err, "message not found")
	}
	return nil
}

// AttachmentUsage is the bytes of the customer's attachments (kept by the
// triggers of migration 013).
func (s *Store) AttachmentUsage(ctx context.Context, customerID int64) (int64, error) {
	var n int64
	err := s.db.QueryRow(ctx, `SELECT coalesce((SELECT bytes FROM attachment_usage WHERE customer_id = $1), 0)`, customerID).Scan(&n)
	return n, postgres.Error(err, "attachment")
}

// Attachments lists the attachments of the customer's message, oldest
// first.
func (s *Store) Attachments(ctx context.Context, customerID, messageID int64) ([]tickets.Attachment, error) {
	var out []tickets.Attachment
	// One snapshot: the message and its attachments as of one moment.
	err := pgx.BeginTxFunc(ctx, s.db, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM ticket_messages WHERE customer_id = $1 AND message_id = $2)`,
			customerID, messageID).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return messageNotFound()
		}
		rows, err := collectAll[attachmentRow](tx.Query(ctx, `SELECT `+attachmentCols+` FROM attachments
			WHERE customer_id = $1 AND message_id = $2 ORDER BY created_at, attachment_id`, customerID, messageID))
		out = convert(rows, attachmentRow.attachment)
		return err
	})
	return out, postgres.Error(err, "attachment")
}

// Attachment returns one attachment of the customer's message.
func (s *Store) Attachment(ctx context.Context, customerID, messageID, id int64) (tickets.Attachment, error) {
	r, err := collectOne[attachmentRow](s.db.Query(ctx, `SELECT `+attachmentCols+` FROM attachments
		WHERE customer_id = $1 AND message_id = $2 AND attachment_id = $3`, customerID, messageID, id))
	return r.attachment(), postgres.Error(err, "attachment")
}

// DeleteAttachment deletes one attachment of the customer's message; the
// trigger lists its key as garbage, due at once.
func (s *Store) DeleteAttachment(ctx context.Context, customerID, messageID, id int64) error {
	tag, err := s.db.Exec(ctx, `DELETE FROM attachments WHERE customer_id = $1 AND message_id = $2 AND attachment_id = $3`,
		customerID, messageID, id)
	if err != nil {
		return postgres.Error(err, "attachment")
	}
	if tag.RowsAffected() == 0 {
		return apperr.E(apperr.NotFound, "attachment not found")
	}
	return nil
}

// SweepBlobs takes up to limit due garbage keys (SKIP LOCKED: replicas
// take different ones), deletes their bytes with del and then their rows,
// in one transaction. del's first error ends the batch: the rows of what
// was deleted before it are removed, the rest stay for the next round.
func (s *Store) SweepBlobs(ctx context.Context, limit int, del func(ctx context.Context, key string) error) (int, error) {
	deleted := 0
	var delErr error
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		keys, err := postgres.Collect(ctx, tx, "garbage", `SELECT object_key FROM blob_garbage WHERE not_before <= $1
			ORDER BY not_before LIMIT $2 FOR UPDATE SKIP LOCKED`, func(r pgx.Row) (string, error) {
			var k string
			return k, r.Scan(&k)
		}, s.now(), limit)
		if err != nil {
			return err
		}
		var done []string
		for _, k := range keys {
			if delErr = del(ctx, k); delErr != nil {
				break
			}
			done = append(done, k)
		}
		if len(done) == 0 {
			return nil
		}
		_, err = tx.Exec(ctx, `DELETE FROM blob_garbage WHERE object_key = ANY($1)`, done)
		deleted = len(done)
		return err
	})
	if err != nil {
		return 0, postgres.Error(err, "garbage")
	}
	return deleted, delErr
}

// claimAttachments stores the metadata of attachments whose bytes are
// written, as attachments of message, and takes their keys off the garbage
// list. When a key is no longer listed (the sweeper took it: the writer
// outlived its due time) it is an Unavailable error and nothing is stored.
// fits decides on the customer's attachment bytes with them, and their
// size (tickets.QuotaFits): the insert's trigger adds their sizes to the
// customer's attachment_usage row, which stays locked until the commit, so
// the figure read after it is exact and concurrent claims queue.
func (s *Store) claimAttachments(ctx context.Context, tx pgx.Tx, customerID, messageID int64, in []tickets.Attachment,
	fits func(used, size int64) error) ([]tickets.Attachment, error) {
	if len(in) == 0 {
		return nil, nil
	}
	keys := make([]string, len(in))
	names := make([]string, len(in))
	types := make([]string, len(in))
	sizes := make([]int64, len(in))
	sums := make([]string, len(in))
	var added int64
	for i, a := range in {
		keys[i], names[i], types[i], sizes[i], sums[i] = a.Key, a.FileName, a.ContentType, a.Size, a.SHA256
		added += a.Size
	}
	var claimed int
	if err := tx.QueryRow(ctx, `WITH gone AS (DELETE FROM blob_garbage WHERE object_key = ANY($1) RETURNING 1)
		SELECT count(*) FROM gone`, keys).Scan(&claimed); err != nil {
		return nil, err
	}
	if claimed != len(keys) {
		// The sweeper has deleted (or is deleting) the bytes.
		return nil, apperr.E(apperr.Unavailable, "the upload took too long; send it again")
	}
	rows, err := collectAll[attachmentRow](tx.Query(ctx, `INSERT INTO attachments (customer_id, message_id, file_name,
		content_type, size, sha256, object_key, created_at)
		SELECT $1, $2, f, c, n, h, k, $8 FROM unnest($3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[]) AS u(f, c, n, h, k)
		RETURNING `+attachmentCols, customerID, messageID, names, types, sizes, sums, keys, s.now()))
	if err != nil {
		return nil, postgres.Error(err, "attachment")
	}
	out := convert(rows, attachmentRow.attachment)
	var used int64
	if err := tx.QueryRow(ctx, `SELECT bytes FROM attachment_usage WHERE customer_id = $1`, customerID).Scan(&used); err != nil {
		return nil, err
	}
	if err := fits(used, added); err != nil {
		return nil, err
	}
	return out, nil
}

// ReserveBlobs lists keys as garbage due at due, before their bytes are
// written for a message that does not exist yet (the mail import).
func (s *Store) ReserveBlobs(ctx context.Context, keys []string, due time.Time) error {
	if len(keys) == 0 {
		return nil
	}
	_, err := s.db.Exec(ctx, `INSERT INTO blob_garbage (object_key, queued_at, not_before)
		SELECT k, $3, $2 FROM unnest($1::text[]) AS k`, keys, due, s.now())
	return postgres.Error(err, "attachment")
}

// DiscardBlobs makes listed keys due at once: bytes written for nothing
// (a duplicate mail) go in the sweeper's next round.
func (s *Store) DiscardBlobs(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	_, err := s.db.Exec(ctx, `UPDATE blob_garbage SET not_before = '-infinity' WHERE object_key = ANY($1)`, keys)
	return postgres.Error(err, "attachment")
}
