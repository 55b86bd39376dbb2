package postgres

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/services/mail/internal/importer"
)

// The import worker's queries. It has the customer of every request, so
// each query is scoped by customer_id as the API's are.

// importSource is the mailbox and provider folder a delta link is made
// for (over channel_folders f JOIN channels c).
const importSource = `coalesce(c.email_address, '') || '/' || f.external_folder_id`

// importTargetSQL selects an import target (scanImportTarget's columns) of
// the folders that where (over f and c; args from $1) matches. A delta link
// made for another mailbox or provider folder is not returned.
func importTargetSQL(where string) string {
	// The tenant is chosen here: only one connected to the folder's
	// customer, else none (Graph is not called; the folder is not importable).
	return `SELECT f.customer_id, f.channel_id, f.folder_id, coalesce(c.email_address, ''),
		CASE WHEN ` + tenantConnected + ` THEN c.provider_tenant_id ELSE '' END,
		f.external_folder_id, ` + subscribable + `,
		CASE WHEN f.delta_link_source = ` + importSource + ` THEN coalesce(f.delta_link, '') ELSE '' END,
		f.import_requests, ` + importSource + `,
		coalesce((SELECT u.user_id FROM mailbox_users u WHERE u.customer_id = c.customer_id AND u.channel_id = c.channel_id
			AND u.address = c.email_address), '')
		FROM channel_folders f JOIN channels c ON c.customer_id = f.customer_id AND c.channel_id = f.channel_id
		WHERE ` + where
}

func scanImportTarget(row pgx.Row) (importer.Target, string, error) {
	var t importer.Target
	var source string
	err := row.Scan(&t.CustomerID, &t.ChannelID, &t.FolderID, &t.Mailbox, &t.TenantID, &t.ExternalFolderID,
		&t.Importable, &t.DeltaLink, &t.Requests, &source, &t.MailboxUserID)
	return t, source, err
}

// ImportTarget returns the customer's folder of the channel with what an
// import needs; NotFound when it is gone or not the customer's.
func (s *Store) ImportTarget(ctx context.Context, customerID, channelID, folderID int64) (importer.Target, error) {
	t, _, err := scanImportTarget(s.db.QueryRow(ctx, importTargetSQL(`f.customer_id = $1 AND f.channel_id = $2 AND f.folder_id = $3`),
		customerID, channelID, folderID))
	return t, postgres.Error(err, "folder")
}

// RequestImport bumps the folder's import request counter; NotFound when
// the folder is gone.
func (s *Store) RequestImport(ctx context.Context, customerID, folderID int64, at time.Time) error {
	tag, err := s.db.Exec(ctx, `UPDATE channel_folders SET import_requests = import_requests + 1, import_requested_at = $3
		WHERE customer_id = $1 AND folder_id = $2`, customerID, folderID, at)
	if err != nil {
		return postgres.Error(err, "folder")
	}
	if tag.RowsAffected() == 0 {
		return apperr.E(apperr.NotFound, "folder not found")
	}
	return nil
}

// ImportRequests returns the folder's import request counter.
func (s *Store) ImportRequests(ctx context.Context, customerID, folderID int64) (int64, error) {
	var n int64
	err := s.db.QueryRow(ctx, `SELECT import_requests FROM channel_folders WHERE customer_id = $1 AND folder_id = $2`,
		customerID, folderID).Scan(&n)
	return n, postgres.Error(err, "folder")
}

// ImportState is a folder's import bookkeeping, for tests and operators.
type ImportState struct {
	DeltaLink         string
	DeltaLinkAt       *time.Time
	Requests          int64
	LastImportAt      *time.Time
	LastImportError   string
	ImportedTotal     int64
	ImportRequestedAt *time.Time
}

// ImportState returns the customer's folder's import bookkeeping.
func (s *Store) ImportState(ctx context.Context, customerID, folderID int64) (ImportState, error) {
	var st ImportState
	err := s.db.QueryRow(ctx, `SELECT coalesce(delta_link, ''), delta_link_at, import_requests, last_import_at,
		last_import_error, imported_total, import_requested_at FROM channel_folders WHERE customer_id = $1 AND folder_id = $2`,
		customerID, folderID).Scan(&st.DeltaLink, &st.DeltaLinkAt, &st.Requests, &st.LastImportAt, &st.LastImportError,
		&st.ImportedTotal, &st.ImportRequestedAt)
	return st, postgres.Error(err, "folder")
}

// importLockSpace is the first key of every folder import lock
// (pg_try_advisory_lock(int, int); "mimp"): the two-key locks are a key
// space of their own, apart from the one-key locks of the migrations.
const importLockSpace int32 = 0x6d696d70

// importLockKey is the second key: the folder id's low 32 bits. Folders
// whose ids differ by a multiple of 2^32 would share a lock; ids are a
// sequence that will not get there.
func importLockKey(folderID int64) int32 { return int32(uint32(folderID)) }

// ImportLocks are the folders' import locks: PostgreSQL session advisory
// locks, each held on a connection of its own from pool for the whole
// import, so a replica that dies (or loses its connection) gives its locks
// up with it. The pool must allow a connection per concurrent import on
// top of what else it serves; give the locks a pool of their own.
type ImportLocks struct {
	pool *pgxpool.Pool
}

// NewImportLocks returns the locks on pool (whose search_path is the mail
// schema).
func NewImportLocks(pool *pgxpool.Pool) *ImportLocks { return &ImportLocks{pool: pool} }

// TryLockImport takes the folder's import lock, or returns ok false at once
// when another session holds it.
func (l *ImportLocks) TryLockImport(ctx context.Context, customerID, folderID int64) (importer.Lease, bool, error) {
	conn, err := l.pool.Acquire(ctx)
	if err != nil {
		return nil, false, postgres.Error(err, "folder")
	}
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2)`, importLockSpace, importLockKey(folderID)).Scan(&ok); err != nil {
		// Whether the lock was taken is unknown: the session goes.
		destroy(conn)
		return nil, false, postgres.Error(err, "folder")
	}
	if !ok {
		conn.Release()
		return nil, false, nil
	}
	return &importLease{conn: conn, customerID: customerID, folderID: folderID}, true, nil
}

// destroy closes a pooled connection instead of returning it, ending its
// session and so any lock it holds.
func destroy(conn *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = conn.Hijack().Close(ctx)
}

// importLease is a held folder import lock. Its queries run on the lock's
// connection: when that connection is gone, so is the lock, and nothing
// can be written under it any more. Its methods are serialised (a round's
// writes and the lock check share the connection).
type importLease struct {
	mu         sync.Mutex
	conn       *pgxpool.Conn
	customerID int64
	folderID   int64
	// source is what the last Load read the folder's delta link for.
	source   string
	released bool
}

func (l *importLease) Load(ctx context.Context) (importer.Target, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return importer.Target{}, errReleased
	}
	t, source, err := scanImportTarget(l.conn.QueryRow(ctx, importTargetSQL(`f.customer_id = $1 AND f.folder_id = $2`),
		l.customerID, l.folderID))
	if err == nil {
		l.source = source
	}
	return t, postgres.Error(err, "folder")
}

var errReleased = errors.New("postgres: the import lock was released")

func (l *importLease) exec(ctx context.Context, sql string, args ...any) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return errReleased
	}
	_, err := l.conn.Exec(ctx, sql, append([]any{l.customerID, l.folderID}, args...)...)
	return postgres.Error(err, "folder")
}

func (l *importLease) ClearDeltaLink(ctx context.Context) error {
	return l.exec(ctx, `UPDATE channel_folders SET delta_link = NULL, delta_link_source = NULL, delta_link_at = NULL
		WHERE customer_id = $1 AND folder_id = $2`)
}

func (l *importLease) Succeeded(ctx context.Context, res importer.RoundResult, at time.Time) error {
	l.mu.Lock()
	source := l.source
	l.mu.Unlock()
	var skip string
	if n := len(res.Unimportable); n > 0 {
		last := res.Unimportable[n-1]
		skip = cut(last.Reason+": message "+last.MessageID+": "+last.Detail, 1000)
	}
	return l.exec(ctx, `UPDATE channel_folders SET delta_link = $3, delta_link_source = $4, delta_link_at = $5,
		last_import_at = $5, last_import_error = '', imported_total = imported_total + $6,
		skipped_messages = skipped_messages + $7,
		last_skip_reason = CASE WHEN $7 > 0 THEN $8 ELSE last_skip_reason END,
		last_skip_at = CASE WHEN $7 > 0 THEN $5 ELSE last_skip_at END
		WHERE customer_id = $1 AND folder_id = $2`, res.DeltaLink, source, at, res.Published, len(res.Unimportable), skip)
}

// cut keeps at most n runes of s.
func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}

func (l *importLease) Failed(ctx context.Context, reason string, at time.Time) error {
	reason = cut(reason, 1000)
	return l.exec(ctx, `UPDATE channel_folders SET last_import_error = $3 WHERE customer_id = $1 AND folder_id = $2`, reason)
}

func (l *importLease) Alive(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return errReleased
	}
	return l.conn.Ping(ctx)
}

func (l *importLease) Release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return
	}
	l.released = true
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var ok bool
	if err := l.conn.QueryRow(ctx, `SELECT pg_advisory_unlock($1, $2)`, importLockSpace, importLockKey(l.folderID)).Scan(&ok); err != nil || !ok {
		destroy(l.conn)
		return
	}
	l.conn.Release()
}
