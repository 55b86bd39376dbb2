package mail

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"
)

// ProviderSubscription is a change-notification subscription as the mail
// provider (Microsoft Graph) reports it.
type ProviderSubscription struct {
	ID              string
	Resource        string
	NotificationURL string
	ClientState     string
	// Expiration is the expiry the provider granted, which may differ
	// from the one asked for: it is the one stored.
	Expiration time.Time
}

// MailboxUser is the provider's user behind a channel's mailbox address,
// resolved once and stored with the address it was resolved for.
type MailboxUser struct {
	Address           string // the channel's address it was resolved for
	ID                string // the user's id: every provider path names the mailbox by it
	UserPrincipalName string
}

// NewProviderSubscription asks for a subscription to the new messages of
// one folder of a mailbox; the provider builds the resource
// /users/{Mailbox}/mailFolders('{FolderID}')/messages with change type
// created.
type NewProviderSubscription struct {
	Mailbox, FolderID                         string
	NotificationURL, LifecycleNotificationURL string
	ClientState                               string
	Expiration                                time.Time
}

// Provider is the mail provider's subscription API (the graph client's
// adapter implements it). Errors are classified with ErrProviderNotFound,
// ErrProviderMaybeCreated and *ProviderThrottled; anything else is a failure
// worth retrying later. Delete answers nil for a subscription that is gone.
// The provider makes a new subscription for every create, even for a
// resource that has one.
type Provider interface {
	// ResolveMailbox finds the user behind a mailbox address (its id is
	// what the provider's paths and resources take; an alias is refused
	// there); ErrProviderNotFound when no user has the address.
	ResolveMailbox(ctx context.Context, tenantID, address string) (MailboxUser, error)
	Create(ctx context.Context, tenantID string, s NewProviderSubscription) (ProviderSubscription, error)
	Renew(ctx context.Context, tenantID, id string, expiration time.Time) (ProviderSubscription, error)
	Delete(ctx context.Context, tenantID, id string) error
	List(ctx context.Context, tenantID string) ([]ProviderSubscription, error)
}

// Provider error classes.
var (
	// ErrProviderNotFound: the subscription does not exist (any more).
	ErrProviderNotFound = errors.New("mail provider: subscription not found")
	// ErrProviderMaybeCreated: a create failed without a clear answer (no
	// answer in time, or a 5xx): the provider may have made the
	// subscription all the same, an orphan to find by listing.
	ErrProviderMaybeCreated = errors.New("mail provider: the subscription may have been created")
)

// ProviderThrottled is a 429 (or a 503 with Retry-After): the tenant is
// not to be called again for RetryAfter (0 when the provider gave none).
type ProviderThrottled struct {
	RetryAfter time.Duration
	Err        error
}

func (e *ProviderThrottled) Error() string {
	msg := "mail provider: throttled"
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *ProviderThrottled) Unwrap() error { return e.Err }

// SubscriptionResource is the resource the provider subscribes for a
// folder of a mailbox: /users/{mailbox}/mailFolders('{folderId}')/messages,
// the one spelling the subscription calls send and the stale-subscription
// check compares with. The mailbox is path-escaped; in the folder id a quote
// is doubled, as OData quotes string literals, and what would end or
// corrupt the path segment (/, %, ?, #, spaces...) is percent-encoded, so
// that ParseFolderResource reads back exactly the mailbox and folder id.
func SubscriptionResource(mailbox, folderID string) string {
	folder := strings.ReplaceAll(url.PathEscape(strings.ReplaceAll(folderID, "'", "''")), "%27", "'")
	return "/users/" + url.PathEscape(mailbox) + "/mailFolders('" + folder + "')/messages"
}

// sameResource compares resources the way the provider may spell them back
// (case and leading slash differ; folder ids themselves are case-sensitive
// but a case-only difference between two of one mailbox's folders is not
// worth a second subscription).
func sameResource(a, b string) bool {
	return strings.EqualFold(strings.TrimPrefix(a, "/"), strings.TrimPrefix(b, "/"))
}

// NotificationPath is where the provider posts notifications, after the
// public base URL (spec section 4 rule 4, lower case as the spec writes it).
const NotificationPath = "/api/providerwebhook"

// CheckPublicBaseURL refuses a public base URL the provider cannot notify:
// not absolute, or not HTTPS (Graph refuses an http notificationUrl, so
// every subscription would fail).
func CheckPublicBaseURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case raw == "" || err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return errors.New("config: PUBLIC_BASE_URL must be the backend's absolute URL (https://...)")
	case u.Scheme != "https":
		return fmt.Errorf("config: PUBLIC_BASE_URL %q is not HTTPS: Microsoft Graph delivers change notifications only to https:// URLs and refuses to create subscriptions for others", raw)
	}
	return nil
}

// Switched is a channel whose automatic retrieval was switched: the channel
// and its folders as they are now, and the subscriptions the switch retired
// by folder id.
type Switched struct {
	Channel Channel
	Folders []Folder
	Retired map[int64]string
}

// LockedFolder is a folder held under its row lock, with its renewal mark.
type LockedFolder struct {
	Target
	// RenewRequestedAt is when the folder is next due whatever its expiry
	// (a lifecycle event, or the next attempt after a failure).
	RenewRequestedAt *time.Time
	// MailboxUser is the provider user resolved for the channel's current
	// address (zero when none is).
	MailboxUser MailboxUser
	// Stored reports which of ids a folder (of any customer) has stored as
	// its subscription, in the lock's transaction: the lock holder needs no
	// second connection while others wait for its lock.
	Stored func(ctx context.Context, ids []string) (map[string]bool, error)
}

// FolderUpdate is what to write to a locked folder before its lock is
// released. SaveUser and Retire run first, then Clear, then Save, then
// RetryAt.
type FolderUpdate struct {
	// SaveUser stores the provider user resolved for the channel's address.
	SaveUser *MailboxUser
	// Retire moves the folder's subscription to the retired ones.
	Retire bool
	// Clear forgets the folder's subscription id, expiry and client state.
	Clear bool
	// Save stores a subscription's id and expiry and clears the renewal
	// mark; the client state stays what it is.
	Save *ProviderSubscription
	// RetryAt marks the folder due again at that time.
	RetryAt *time.Time
	// CatchUpAt queues a catch-up import of the folder requested at that
	// time, in the same transaction (through the outbox, so NATS being down
	// loses nothing): a new subscription misses what came before it.
	CatchUpAt *time.Time
}

// LockedFunc works on a folder while its row is locked.
type LockedFunc func(ctx context.Context, f LockedFolder) (FolderUpdate, error)

// RetiredSubscription is a subscription to delete at the provider.
type RetiredSubscription struct {
	ID         string
	CustomerID int64
	TenantID   string
	Attempts   int
	LastError  string
}

// RetiredResult is what a deletion attempt did: Done removes the row;
// otherwise the attempt is counted and retried at RetryAt.
type RetiredResult struct {
	Done    bool
	RetryAt time.Time
	Error   string
}

// ClaimSkip leaves tenants (throttled) and rows (already attempted this
// round) out of a claim.
type ClaimSkip struct {
	Tenants []string
	Folders []int64
	Retired []string
}

// SubscriptionStore is what the subscription service needs of the store
// (the toggles, the sync after a channel change, and the folder and
// retired-subscription work the renewal job hands it). Customer-facing
// methods are scoped by customer id; ClaimRetired for 0 ranges over every
// customer.
type SubscriptionStore interface {
	Channel(ctx context.Context, customerID, id int64) (Channel, error)
	AllFolders(ctx context.Context, customerID, channelID int64) ([]Folder, error)
	// SetAutoRetrieve switches a live e-mail channel and its folders; off
	// retires their subscriptions. NotFound for anything else.
	SetAutoRetrieve(ctx context.Context, customerID, channelID int64, on bool) (Switched, error)
	// SavePending stores clientState on a folder that has neither a
	// subscription nor a client state, committed before the provider is
	// asked, so that early notifications are recognised.
	SavePending(ctx context.Context, customerID, folderID int64, clientState string) error
	// WithFolderLock runs fn with the folder's row locked and applies its
	// update in the same transaction.
	WithFolderLock(ctx context.Context, customerID, folderID int64, fn LockedFunc) error
	// ClaimRetired locks one retired subscription (of customerID, or of
	// anyone for 0) that is new or due and runs fn on it.
	ClaimRetired(ctx context.Context, customerID int64, now time.Time, skip ClaimSkip, fn func(ctx context.Context, r RetiredSubscription) RetiredResult) (bool, error)
}

// SubscriptionOptions configure a SubscriptionService.
type SubscriptionOptions struct {
	Store    SubscriptionStore
	Provider Provider
	// PublicBaseURL is the backend's public address; notifications go to
	// it followed by NotificationPath.
	PublicBaseURL string
	// Lifetime is asked for every subscription (default 70h: about three
	// days and under Graph's 4,230-minute maximum for messages).
	Lifetime time.Duration
	// RetryDelay is how long a folder whose provider call failed waits for
	// the next attempt (default 1m); a Retry-After overrides it.
	RetryDelay time.Duration
	// CreateTimeout is how long the provider's create may take (the graph
	// client's own bound; default 35s). A caller with a shorter time budget
	// (the toggles' REQUEST_TIMEOUT) leaves the folders it cannot give that
	// time to the renewal job; a folder whose create may have been made
	// anyway is tried again after it, when the provider has finished.
	CreateTimeout time.Duration
	// CleanupTimeout bounds finding and deleting the orphans of one folder
	// (default 15s).
	CleanupTimeout time.Duration
	Metrics        *SubscriptionMetrics // nil: none
	Now            func() time.Time
	Log            *slog.Logger
}

// SubscriptionService keeps the provider subscriptions of channel folders
// in line with their switches: the toggles, the sync after a channel change
// and the renewal job all go through it.
type SubscriptionService struct {
	store     SubscriptionStore
	provider  Provider
	notifyURL string
	lifetime  time.Duration
	retry     time.Duration
	createIn  time.Duration // the provider's create timeout
	cleanup   time.Duration
	metrics   *SubscriptionMetrics
	now       func() time.Time
	log       *slog.Logger
	throttle  *throttle
}

// NewSubscriptionService returns the service with o's defaults filled in.
func NewSubscriptionService(o SubscriptionOptions) *SubscriptionService {
	if o.Lifetime <= 0 {
		o.Lifetime = 70 * time.Hour
	}
	if o.RetryDelay <= 0 {
		o.RetryDelay = time.Minute
	}
	if o.CreateTimeout <= 0 {
		o.CreateTimeout = 35 * time.Second
	}
	if o.CleanupTimeout <= 0 {
		o.CleanupTimeout = 15 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &SubscriptionService{store: o.Store, provider: o.Provider,
		notifyURL: strings.TrimRight(o.PublicBaseURL, "/") + NotificationPath, lifetime: o.Lifetime,
		retry: o.RetryDelay, createIn: o.CreateTimeout, cleanup: o.CleanupTimeout, metrics: o.Metrics, now: o.Now, log: o.Log, throttle: newThrottle()}
}

// NotificationURL is the address given to the provider for notifications
// and lifecycle events.
func (s *SubscriptionService) NotificationURL() string { return s.notifyURL }

// throttle remembers, per provider tenant, when it may be called again
// (Retry-After). It lives in memory: a restart forgets it, and the provider
// would answer 429 again.
type throttle struct {
	mu    sync.Mutex
	until map[string]time.Time
}

func newThrottle() *throttle { return &throttle{until: map[string]time.Time{}} }

func (t *throttle) block(tenant string, until time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if until.After(t.until[tenant]) {
		t.until[tenant] = until
	}
}

// blocked reports until when tenant may not be called, if it may not now.
func (t *throttle) blocked(tenant string, now time.Time) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	u, ok := t.until[tenant]
	if ok && !now.Before(u) {
		delete(t.until, tenant)
		return time.Time{}, false
	}
	return u, ok
}

// tenants lists the tenants blocked at now.
func (t *throttle) tenants(now time.Time) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := []string{}
	for k, u := range t.until {
		if now.Before(u) {
			out = append(out, k)
		}
	}
	return out
}

// newClientState is a fresh secret for one subscription: 32 random bytes,
// 43 characters of base64url (the provider allows 128).
func newClientState() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// shouldSubscribe reports whether the folder should have a subscription.
func shouldSubscribe(t Target) bool {
	return t.Channel.Subscribable() && t.Channel.AutoRetrieveEmails && t.Folder.AutoRetrieveEmails
}

// maxErrorLen bounds the provider error text kept on outcomes and rows.
const maxErrorLen = 500

func errorText(err error) string {
	s := err.Error()
	if len(s) > maxErrorLen {
		s = s[:maxErrorLen]
	}
	return s
}

// failure records a failed provider call and returns when the folder (or
// row) is due again: after delay, or after the Retry-After of a throttled
// call, for which the whole tenant is blocked as long.
func (s *SubscriptionService) failure(tenant string, err error, now time.Time, delay time.Duration) time.Time {
	var th *ProviderThrottled
	if errors.As(err, &th) {
		if th.RetryAfter > 0 {
			delay = th.RetryAfter
		}
		s.throttle.block(tenant, now.Add(delay))
	}
	return now.Add(delay)
}

// errThrottled is the error of a call not made because the tenant is
// throttled.
func errThrottled(until time.Time) error {
	return fmt.Errorf("mail provider: tenant throttled until %s", until.UTC().Format(time.RFC3339))
}

// create makes a subscription for the folder with its stored client state.
// The provider makes a new subscription for every create, so one that may
// have been made without our knowing (an earlier create that timed out or
// failed with a 5xx) would live on beside the stored one, notifying and
// counting toward the mailbox's limit: an orphan. After such a failure the
// folder's orphans are deleted at once, and again before its next create
// (inDoubt: the folder is due after a failure), when a create the provider
// finished late has surely ended.
//
// It returns the mailbox user it resolved, to be stored (nil when the
// stored one was used), whatever the create's outcome.
func (s *SubscriptionService) create(ctx context.Context, lf LockedFolder, inDoubt bool, now time.Time) (ProviderSubscription, *MailboxUser, error) {
	t, clientState := lf.Target, lf.ClientState
	tenant, err := t.Channel.GraphTenant()
	if err != nil {
		return ProviderSubscription{}, nil, err
	}
	user, resolved, err := s.mailboxUser(ctx, lf)
	if err != nil {
		return ProviderSubscription{}, nil, err
	}
	if inDoubt {
		if err := s.removeOrphans(ctx, lf, user); err != nil {
			return ProviderSubscription{}, resolved, fmt.Errorf("removing the folder's orphaned subscriptions: %w", err)
		}
	}
	req := NewProviderSubscription{Mailbox: user, FolderID: t.Folder.ExternalFolderID,
		NotificationURL: s.notifyURL, LifecycleNotificationURL: s.notifyURL, ClientState: clientState,
		Expiration: now.Add(s.lifetime)}
	sub, err := s.provider.Create(ctx, tenant, req)
	if errors.Is(err, ErrProviderMaybeCreated) && s.fits(ctx, s.cleanup) {
		cctx, cancel := context.WithTimeout(ctx, s.cleanup)
		defer cancel()
		if cerr := s.removeOrphans(cctx, lf, user); cerr != nil {
			s.log.WarnContext(ctx, "orphaned subscriptions not removed; retried before the next create", "folderID", t.Folder.ID, "error", errorText(cerr))
		}
	}
	return sub, resolved, err
}

// removeOrphans deletes the provider subscriptions of the folder's resource
// and the platform's notification URL that are not the folder's stored one
// and that no other folder has stored (never another folder's, whoever's
// it is); when the provider reports client states, only those with the
// folder's.
func (s *SubscriptionService) removeOrphans(ctx context.Context, lf LockedFolder, user string) error {
	t, clientState := lf.Target, lf.ClientState
	tenant, err := t.Channel.GraphTenant()
	if err != nil {
		return err
	}
	list, err := s.provider.List(ctx, tenant)
	if err != nil {
		return err
	}
	// The folder's resource names the mailbox by its user id; subscriptions
	// made before the address was resolved name it by the address.
	resource := SubscriptionResource(user, t.Folder.ExternalFolderID)
	byAddress := SubscriptionResource(t.Channel.EmailAddress, t.Folder.ExternalFolderID)
	var candidates []string
	for _, l := range list {
		if l.ID != t.Folder.SubscriptionID && (sameResource(l.Resource, resource) || sameResource(l.Resource, byAddress)) &&
			strings.EqualFold(l.NotificationURL, s.notifyURL) &&
			(l.ClientState == "" || l.ClientState == clientState) {
			candidates = append(candidates, l.ID)
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	stored, err := lf.Stored(ctx, candidates)
	if err != nil {
		return err
	}
	for _, id := range candidates {
		if stored[id] {
			continue
		}
		if err := s.provider.Delete(ctx, tenant, id); err != nil && !errors.Is(err, ErrProviderNotFound) {
			return err
		}
		s.metrics.orphan()
		s.log.InfoContext(ctx, "deleted an orphaned provider subscription", "folderID", t.Folder.ID, "subscriptionID", id)
	}
	return nil
}

// mailboxUser returns the provider's id of the locked folder's mailbox:
// the one stored for the channel's current address, else resolved now
// (GET /users/{address}, then by proxy address), returned to be stored.
// Graph's paths and subscription resources take only a user's id or
// userPrincipalName; an alias fails there with 404 ErrorInvalidUser.
func (s *SubscriptionService) mailboxUser(ctx context.Context, lf LockedFolder) (string, *MailboxUser, error) {
	c := lf.Channel
	if u := lf.MailboxUser; u.ID != "" && u.Address == c.EmailAddress {
		return u.ID, nil, nil
	}
	tenant, err := c.GraphTenant()
	if err != nil {
		return "", nil, err
	}
	u, err := s.provider.ResolveMailbox(ctx, tenant, c.EmailAddress)
	if errors.Is(err, ErrProviderNotFound) {
		return "", nil, fmt.Errorf("no user of tenant %s has the mailbox address %s: %w", tenant, c.EmailAddress, err)
	}
	if err != nil {
		return "", nil, fmt.Errorf("resolving the mailbox address %s: %w", c.EmailAddress, err)
	}
	u.Address = c.EmailAddress
	s.log.InfoContext(ctx, "mailbox address resolved", "channelID", c.ID, "userID", u.ID)
	return u.ID, &u, nil
}

// fits reports whether ctx leaves at least d (a margin for the answer
// included) before its deadline, if it has one.
func (s *SubscriptionService) fits(ctx context.Context, d time.Duration) bool {
	deadline, ok := ctx.Deadline()
	return !ok || time.Until(deadline) >= d+answerMargin
}

// answerMargin is kept of a request's budget for writing its answer.
const answerMargin = 2 * time.Second

func activeOutcome(f Folder, outcome string) FolderOutcome {
	return FolderOutcome{FolderID: f.ID, ExternalFolderID: f.ExternalFolderID, AutoRetrieveEmails: f.AutoRetrieveEmails,
		Outcome: outcome, SubscriptionID: f.SubscriptionID, SubscriptionExpiration: f.SubscriptionExpiration}
}

func failedOutcome(f Folder, err error) FolderOutcome {
	return FolderOutcome{FolderID: f.ID, ExternalFolderID: f.ExternalFolderID, AutoRetrieveEmails: f.AutoRetrieveEmails,
		Outcome: OutcomeFailed, Error: errorText(err)}
}

// ensure gives a folder the subscription it should have. Its client state
// is committed first (a notification may beat the stored id); then, under
// the folder's row lock, so that concurrent syncs make one subscription, it
// is created unless one exists. honourMark leaves a folder whose retry is
// not due yet alone (the renewal job; a toggle tries at once).
func (s *SubscriptionService) ensure(ctx context.Context, customerID, folderID int64, honourMark bool) (FolderOutcome, error) {
	state, err := newClientState()
	if err != nil {
		return FolderOutcome{}, err
	}
	if err := s.store.SavePending(ctx, customerID, folderID, state); err != nil {
		return FolderOutcome{}, err
	}
	var out FolderOutcome
	err = s.store.WithFolderLock(ctx, customerID, folderID, func(ctx context.Context, lf LockedFolder) (FolderUpdate, error) {
		f, now := lf.Folder, s.now()
		switch {
		case !shouldSubscribe(lf.Target):
			out = activeOutcome(f, OutcomeNone)
			if lf.Channel.Provider != ProviderMicrosoft365 {
				out.Outcome = OutcomeSkipped
			}
			return FolderUpdate{Clear: f.SubscriptionID == "" && lf.ClientState != ""}, nil
		case f.SubscriptionID != "":
			out = activeOutcome(f, OutcomeActive)
			return FolderUpdate{}, nil
		case honourMark && lf.RenewRequestedAt != nil && lf.RenewRequestedAt.After(now):
			out = failedOutcome(f, fmt.Errorf("the next attempt is due at %s", lf.RenewRequestedAt.UTC().Format(time.RFC3339)))
			return FolderUpdate{}, nil
		case lf.ClientState == "":
			// Cleared between SavePending and the lock (a concurrent
			// switch off and on): try again soon with a fresh one.
			at := now
			out = failedOutcome(f, errors.New("the folder changed meanwhile; retried"))
			return FolderUpdate{RetryAt: &at}, nil
		}
		if until, blocked := s.throttle.blocked(lf.Channel.ProviderTenantID, now); blocked {
			out = failedOutcome(f, errThrottled(until))
			return FolderUpdate{RetryAt: &until}, nil
		}
		sub, user, err := s.create(ctx, lf, lf.RenewRequestedAt != nil, now)
		if err != nil {
			s.metrics.create(false)
			delay, from := s.retry, now
			if errors.Is(err, ErrProviderMaybeCreated) {
				// Once the provider has surely finished the create (as
				// long again as we waited for it), the next attempt finds
				// what it made.
				delay, from = min(delay, s.createIn), s.now()
			}
			at := s.failure(lf.Channel.ProviderTenantID, err, from, delay)
			out = failedOutcome(f, err)
			s.log.WarnContext(ctx, "provider subscription not created", "folderID", f.ID, "error", errorText(err))
			return FolderUpdate{SaveUser: user, RetryAt: &at}, nil
		}
		s.metrics.create(true)
		f.SubscriptionID, f.SubscriptionExpiration = sub.ID, ptr(sub.Expiration.UTC())
		out = activeOutcome(f, OutcomeSubscribed)
		return FolderUpdate{SaveUser: user, Save: &sub, CatchUpAt: &now}, nil
	})
	if err != nil {
		return FolderOutcome{}, err
	}
	return out, nil
}

func ptr[T any](v T) *T { return &v }

// deleteRetired deletes retired subscriptions at the provider, one row at a
// time under its lock (the API and the renewal job never both delete one).
// customerID 0 takes every customer's. It returns what happened to each
// subscription it tried: nil for deleted.
func (s *SubscriptionService) deleteRetired(ctx context.Context, customerID int64, stop func() bool) (map[string]error, error) {
	done := map[string]error{}
	var skip ClaimSkip
	for !stop() {
		now := s.now()
		skip.Tenants = s.throttle.tenants(now)
		claimed, err := s.store.ClaimRetired(ctx, customerID, now, skip, func(ctx context.Context, r RetiredSubscription) RetiredResult {
			skip.Retired = append(skip.Retired, r.ID)
			err := s.provider.Delete(ctx, r.TenantID, r.ID)
			if err == nil || errors.Is(err, ErrProviderNotFound) {
				s.metrics.delete(true)
				done[r.ID] = nil
				return RetiredResult{Done: true}
			}
			s.metrics.delete(false)
			done[r.ID] = err
			s.log.WarnContext(ctx, "retired provider subscription not deleted", "attempts", r.Attempts+1, "error", errorText(err))
			return RetiredResult{RetryAt: s.failure(r.TenantID, err, now, retiredBackoff(r.Attempts)), Error: errorText(err)}
		})
		if err != nil {
			return done, err
		}
		if !claimed {
			break
		}
	}
	return done, nil
}

// retiredBackoff is the wait after a retired subscription's attempts-th
// failed deletion (attempts before it): 1m, 2m, 4m ... at most 1h.
func retiredBackoff(attempts int) time.Duration {
	d := time.Minute
	for i := 0; i < attempts && d < time.Hour; i++ {
		d *= 2
	}
	return min(d, time.Hour)
}

// SyncChannel brings a channel's subscriptions in line with its switches:
// the customer's retired subscriptions are deleted at the provider (all of
// the customer's, not only this channel's: retired rows keep no channel,
// and deleting them early is never wrong), and every folder that should
// have a subscription gets one. Provider failures are outcomes, not errors
// (the renewal job retries them); the error is the store's.
func (s *SubscriptionService) SyncChannel(ctx context.Context, customerID, channelID int64) ([]FolderOutcome, error) {
	outcomes, _, err := s.sync(ctx, customerID, channelID)
	return outcomes, err
}

func (s *SubscriptionService) sync(ctx context.Context, customerID, channelID int64) ([]FolderOutcome, map[string]error, error) {
	deleted, err := s.deleteRetired(ctx, customerID, func() bool { return ctx.Err() != nil })
	if err != nil {
		return nil, deleted, err
	}
	c, err := s.store.Channel(ctx, customerID, channelID)
	if err != nil {
		return nil, deleted, err
	}
	folders, err := s.store.AllFolders(ctx, customerID, channelID)
	if err != nil {
		return nil, deleted, err
	}
	out := make([]FolderOutcome, 0, len(folders))
	for _, f := range folders {
		switch {
		case c.Provider != ProviderMicrosoft365 || c.Kind != KindEmail:
			out = append(out, activeOutcome(f, OutcomeSkipped))
		case !c.TenantConnected && !c.IsDeleted && c.AutoRetrieveEmails && f.AutoRetrieveEmails:
			// Wants mail, but no token is taken for its tenant: say why.
			out = append(out, failedOutcome(f, ErrTenantNotConnected))
		case !shouldSubscribe(Target{Folder: f, Channel: c}):
			out = append(out, activeOutcome(f, OutcomeNone))
		case f.SubscriptionID == "" && !s.fits(ctx, s.createIn+s.cleanup):
			// The caller's time budget cannot hold a create: the renewal
			// job makes it (it lists folders that should have one).
			out = append(out, failedOutcome(f, errors.New("not attempted within this request's time; the renewal job makes it")))
		default:
			o, err := s.ensure(ctx, customerID, f.ID, false)
			if err != nil {
				return nil, deleted, err
			}
			out = append(out, o)
		}
	}
	return out, deleted, nil
}
