package mail

import (
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
)

// Lifecycle events of the provider (Notification.LifecycleEvent).
const (
	LifecycleReauthorizationRequired = "reauthorizationRequired"
	LifecycleSubscriptionRemoved     = "subscriptionRemoved"
	LifecycleMissed                  = "missed"
)

// Notification is one item of a provider notification (Graph's change or
// lifecycle notification).
type Notification struct {
	SubscriptionID         string
	SubscriptionExpiration time.Time // zero when absent or unreadable
	ClientState            string
	ChangeType             string
	Resource               string
	ResourceID             string // the message id; not used (the import is per folder)
	TenantID               string
	LifecycleEvent         string // "" for a change notification
}

// NotifyResult counts what became of the items of one Notify call.
type NotifyResult struct {
	Received int
	Queued   int // covered by a durably queued import (coalesced repeats included)
	Handled  int // lifecycle events acted on without an import
	Parked   int // subscription id not known yet; retried in the background
	Dropped  int // forged, unknown, switched off, rate-limited... (see metrics)
}

// NotifierStore is what the notification path reads and writes. The
// lookups have no customer: the provider sends none.
type NotifierStore interface {
	// TargetBySubscription is NotFound for an id no folder holds.
	TargetBySubscription(ctx context.Context, subscriptionID string) (Target, error)
	TargetsByMailbox(ctx context.Context, mailbox, externalFolderID string) ([]Target, error)
	MarkNotified(ctx context.Context, folderID int64, at time.Time) error
	RequestRenewal(ctx context.Context, folderID int64, at time.Time) error
	SubscriptionRemoved(ctx context.Context, folderID int64, subscriptionID string, at time.Time) error
	// PendingTargets are the folders waiting for the subscription create
	// that carries clientState: their client state is stored (before the
	// create call) and no subscription id yet.
	PendingTargets(ctx context.Context, clientState string) ([]Target, error)
}

// ImportQueue queues folder imports; Import returns nil only once the
// request is durable (internal/queue.Queue).
type ImportQueue interface {
	Import(ctx context.Context, r contracts.MailImportRequest) error
}

// NotifierOptions tune the notifier; zero fields take the defaults.
type NotifierOptions struct {
	// CacheSize bounds the lookup cache; PositiveTTL and NegativeTTL are how
	// long a found and a not-found lookup are believed (10,000, 30 s, 10 s).
	CacheSize   int
	PositiveTTL time.Duration
	NegativeTTL time.Duration
	// UnknownLookupRate and UnknownLookupBurst bound the database lookups
	// that find nothing (per second; 20, burst 50): a flood of forged ids
	// costs PostgreSQL at most that. Lookups that find a folder give their
	// token back.
	UnknownLookupRate  float64
	UnknownLookupBurst int
	// CacheBytes bounds the lookup cache's estimated memory (4 MiB).
	CacheBytes int
	// SubscriptionRate and SubscriptionBurst bound the items of one
	// subscription id (per second; 1,000, burst 2,000) among at most
	// MaxLimiters ids (10,000) and LimiterBytes of estimated memory (2 MiB).
	SubscriptionRate  float64
	SubscriptionBurst int
	MaxLimiters       int
	LimiterBytes      int
	// ParkSize bounds the parked items (10,000), ParkBytes their estimated
	// memory (4 MiB). A parked id is looked up
	// again after ParkFirstRetry, doubling up to ParkMaxBackoff (1 s, 30 s),
	// until ParkMaxAge (3 min). Run checks every ParkTick (250 ms) and gives
	// each parked id ParkItemBudget (5 s) to be queued.
	ParkSize       int
	ParkBytes      int
	ParkMaxAge     time.Duration
	ParkFirstRetry time.Duration
	ParkMaxBackoff time.Duration
	ParkTick       time.Duration
	ParkItemBudget time.Duration
	// DropLogWindow is how often at most malformed items are logged (1 min).
	DropLogWindow time.Duration
}

func (o NotifierOptions) withDefaults() NotifierOptions {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	defInt := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defInt(&o.CacheSize, 10000)
	def(&o.PositiveTTL, 30*time.Second)
	def(&o.NegativeTTL, 10*time.Second)
	if o.UnknownLookupRate <= 0 {
		o.UnknownLookupRate = 20
	}
	defInt(&o.UnknownLookupBurst, 50)
	if o.SubscriptionRate <= 0 {
		o.SubscriptionRate = 1000
	}
	defInt(&o.SubscriptionBurst, 2000)
	defInt(&o.MaxLimiters, 10000)
	defInt(&o.LimiterBytes, 2<<20)
	defInt(&o.CacheBytes, 4<<20)
	defInt(&o.ParkSize, 10000)
	defInt(&o.ParkBytes, 4<<20)
	def(&o.DropLogWindow, time.Minute)
	def(&o.ParkMaxAge, 3*time.Minute)
	def(&o.ParkFirstRetry, time.Second)
	def(&o.ParkMaxBackoff, 30*time.Second)
	def(&o.ParkTick, 250*time.Millisecond)
	def(&o.ParkItemBudget, 5*time.Second)
	return o
}

// Notifier turns provider notifications into folder imports (spec sections
// 3 and 4): it finds the folder by subscription id, else by the resource
// path, checks the client state, acts on lifecycle events and queues one
// import per folder and coalescing bucket.
//
// Every item that is not queued is still answered 2xx (a 4xx makes the
// provider retry for hours): forged, unknown, switched-off and rate-limited
// items are dropped and counted. Only a failure to queue (or to read the
// store) is an error, so that the provider retries the whole POST.
//
// Rate limits: items of one subscription id beyond SubscriptionRate are
// dropped. At such rates the coalescing bucket already holds an import of
// the folder, which reads everything new, so nothing is lost.
//
// Sizes: an item with a field larger than Graph ever sends (GUID ids, a
// clientState of at most 128 characters, a bounded resource) or a
// changeType or lifecycleEvent Graph does not have is dropped first, before
// it touches the rate limiter, the cache or the park; such drops are
// logged at most once per DropLogWindow. The limiter, the cache and the
// park are bounded in entries and in bytes.
//
// Parking: the provider can notify before the create call that made the
// subscription has returned and its id is stored. Items of an unknown id
// are parked (bounded) and looked up again with backoff by Run, but only
// while a create is in flight for them: a folder holds the item's
// clientState and no subscription id (the state SavePending commits before
// the create call, which storing the id or clearing the folder ends). The
// client state is a secret only the provider learns, so a stranger's items
// are never parked. A parked item dropped at last loses nothing either:
// creating a subscription queues a catch-up import of its folder.
type Notifier struct {
	store NotifierStore
	q     ImportQueue
	now   func() time.Time
	log   *slog.Logger
	m     *notifyMetrics
	o     NotifierOptions

	cache   *lookupCache
	lookups singleflight.Group
	limiter *keyedLimiter

	mu      sync.Mutex
	unknown *tokenBucket         // database lookups that find nothing
	queued  map[importKey]bool   // imports acknowledged in this process
	marked  map[int64]int64      // folder → bucket of its last MarkNotified
	park    map[string]*parkedID // subscription id → parked items
	parkN   int                  // parked items held (not counting repeats)
	parkB   int                  // their estimated bytes
	drops   dropLog

	publishes singleflight.Group

	runMu   sync.Mutex // orders Run's start before Close's wait
	closed  bool
	closing chan struct{}
	running sync.WaitGroup
}

type importKey struct {
	folderID int64
	reason   string
	bucket   int64
}

type parkedID struct {
	items   []*parkedItem
	since   time.Time
	next    time.Time
	attempt int
}

// parkedItem is a parked notification and how many equal ones (same client
// state and lifecycle event) arrived: they have one fate.
type parkedItem struct {
	n     Notification
	count int
}

// NewNotifier returns a notifier; its park retries run in Run.
func NewNotifier(store NotifierStore, q ImportQueue, now func() time.Time, log *slog.Logger, reg *prometheus.Registry, opts NotifierOptions) *Notifier {
	o := opts.withDefaults()
	return &Notifier{
		store: store, q: q, now: now, log: log, m: newNotifyMetrics(reg, log), o: o,
		cache:   newLookupCache(o.CacheSize, o.CacheBytes, o.PositiveTTL, o.NegativeTTL),
		limiter: newKeyedLimiter(o.MaxLimiters, o.LimiterBytes, o.SubscriptionRate, o.SubscriptionBurst),
		unknown: newTokenBucket(o.UnknownLookupRate, o.UnknownLookupBurst, now()),
		queued:  map[importKey]bool{},
		marked:  map[int64]int64{},
		park:    map[string]*parkedID{},
		closing: make(chan struct{}),
		drops:   dropLog{window: o.DropLogWindow},
	}
}

// outcome is what became of one item.
type outcome struct {
	kind   int
	reason string // the drop reason
}

const (
	outQueued = iota
	outHandled
	outParked
	outDropped
)

func dropped(reason string) outcome { return outcome{kind: outDropped, reason: reason} }

// errNoToken: the unknown-lookup budget is spent; the item is unknown
// without a query.
var errNoToken = errors.New("unknown-lookup budget spent")

// Notify processes the items of one POST, each separately. It returns once
// every import it queues is durable; an error (apperr.Unavailable) means
// some could not be queued and the provider should send the POST again
// (what was queued is coalesced with the repeat).
func (n *Notifier) Notify(ctx context.Context, items []Notification) (NotifyResult, error) {
	var res NotifyResult
	for _, it := range items {
		if err := ctx.Err(); err != nil {
			return res, unavailable(err)
		}
		res.Received++
		n.m.received.Inc()
		o, err := n.notifyOne(ctx, it)
		if err != nil {
			return res, err
		}
		n.count(&res, o, 1)
	}
	return res, nil
}

func (n *Notifier) count(res *NotifyResult, o outcome, weight int) {
	w := float64(weight)
	switch o.kind {
	case outQueued:
		res.Queued += weight
		n.m.queued.Add(w)
	case outHandled:
		res.Handled += weight
	case outParked:
		res.Parked += weight
		n.m.parked.Add(w)
	case outDropped:
		res.Dropped += weight
		n.m.dropped.WithLabelValues(o.reason).Add(w)
	}
}

func unavailable(err error) error {
	if apperr.Is(err, apperr.Unavailable) {
		return err
	}
	e := apperr.Wrap(apperr.Unavailable, err, "the notification could not be processed now; send it again")
	e.RetryAfterSeconds = 1
	return e
}

func (n *Notifier) notifyOne(ctx context.Context, it Notification) (outcome, error) {
	now := n.now()
	// First, so that nothing below holds an attacker-sized string.
	if field := CheckNotification(it); field != "" {
		n.drops.add(n.log, field, fieldSize(it, field), now)
		if field == "lifecycleEvent" {
			return dropped(DropUnknownLifecycle), nil
		}
		return dropped(DropMalformed), nil
	}
	// Per subscription id, never per client address: the provider sends
	// from many addresses.
	if !n.limiter.allow(it.SubscriptionID, now) {
		return dropped(DropRateLimited), nil
	}
	validID := it.SubscriptionID != ""
	if validID {
		ts, err := n.lookupSubscription(ctx, it.SubscriptionID, now, false)
		switch {
		case errors.Is(err, errNoToken):
			return dropped(DropUnknown), nil
		case err != nil:
			return outcome{}, err
		case len(ts) > 0:
			return n.handle(ctx, it, ts, now)
		}
	}
	if r, ok := ParseFolderResource(it.Resource); ok {
		ts, err := n.lookupMailbox(ctx, r, now)
		switch {
		case errors.Is(err, errNoToken):
			return dropped(DropUnknown), nil
		case err != nil:
			return outcome{}, err
		case len(ts) > 0:
			return n.handle(ctx, it, ts, now)
		}
	} else if !validID {
		return dropped(DropUnparseable), nil
	}
	if !validID {
		return dropped(DropUnknown), nil
	}
	inFlight, err := n.createInFlight(ctx, it.ClientState, now)
	switch {
	case errors.Is(err, errNoToken):
		return dropped(DropUnknown), nil
	case err != nil:
		return outcome{}, err
	case !inFlight:
		return dropped(DropUnknown), nil
	case !n.parkItem(it, now):
		return dropped(DropParkFull), nil
	}
	return outcome{kind: outParked}, nil
}

// createInFlight reports whether a subscription create carrying
// clientState is under way (PendingTargets), through the cache and the
// lookup budget like the other lookups.
func (n *Notifier) createInFlight(ctx context.Context, clientState string, now time.Time) (bool, error) {
	if clientState == "" {
		return false, nil
	}
	ts, err := n.lookup(ctx, "p:"+clientState, now, false, func(ctx context.Context) ([]Target, error) {
		return n.store.PendingTargets(ctx, clientState)
	})
	return len(ts) > 0, err
}

// lookupSubscription resolves a subscription id through the cache; one
// database query per id at a time (singleflight). bypassNegative looks
// again although the id is cached as unknown (the park's retries).
func (n *Notifier) lookupSubscription(ctx context.Context, id string, now time.Time, bypassNegative bool) ([]Target, error) {
	key := "s:" + id
	return n.lookup(ctx, key, now, bypassNegative, func(ctx context.Context) ([]Target, error) {
		t, err := n.store.TargetBySubscription(ctx, id)
		if apperr.Is(err, apperr.NotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return []Target{t}, nil
	})
}

func (n *Notifier) lookupMailbox(ctx context.Context, r FolderResource, now time.Time) ([]Target, error) {
	key := "m:" + r.Mailbox + "\x00" + r.FolderID
	return n.lookup(ctx, key, now, false, func(ctx context.Context) ([]Target, error) {
		return n.store.TargetsByMailbox(ctx, r.Mailbox, r.FolderID)
	})
}

func (n *Notifier) lookup(ctx context.Context, key string, now time.Time, bypassNegative bool, query func(context.Context) ([]Target, error)) ([]Target, error) {
	if ts, hit := n.cache.get(key, now); hit && (len(ts) > 0 || !bypassNegative) {
		return ts, nil
	}
	v, err, _ := n.lookups.Do(key, func() (any, error) {
		n.mu.Lock()
		ok := n.unknown.take(now)
		n.mu.Unlock()
		if !ok {
			if ts := n.cache.stale(key); len(ts) > 0 {
				return ts, nil
			}
			return nil, errNoToken
		}
		n.m.lookups.Inc()
		ts, err := query(ctx)
		if err != nil {
			return nil, unavailable(err)
		}
		if len(ts) > 0 {
			n.mu.Lock()
			n.unknown.refund()
			n.mu.Unlock()
		}
		n.cache.put(key, ts, now)
		return ts, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]Target), nil
}

// handle decides an item whose candidate folders are known.
func (n *Notifier) handle(ctx context.Context, it Notification, candidates []Target, now time.Time) (outcome, error) {
	t, o, ok := pick(candidates, it.ClientState)
	if !ok {
		return o, nil
	}
	reason := contracts.ImportNotification
	switch it.LifecycleEvent {
	case "":
		n.markNotified(ctx, t.Folder.ID, now)
	case LifecycleReauthorizationRequired:
		if err := n.store.RequestRenewal(ctx, t.Folder.ID, now); err != nil && !apperr.Is(err, apperr.NotFound) {
			return outcome{}, unavailable(err)
		}
		n.m.lifecycle.WithLabelValues(it.LifecycleEvent).Inc()
		return outcome{kind: outHandled}, nil
	case LifecycleSubscriptionRemoved:
		if err := n.store.SubscriptionRemoved(ctx, t.Folder.ID, it.SubscriptionID, now); err != nil && !apperr.Is(err, apperr.NotFound) {
			return outcome{}, unavailable(err)
		}
		n.cache.forget("s:" + it.SubscriptionID)
		n.m.lifecycle.WithLabelValues(it.LifecycleEvent).Inc()
		return outcome{kind: outHandled}, nil
	case LifecycleMissed:
		reason = contracts.ImportMissed
		n.m.lifecycle.WithLabelValues(it.LifecycleEvent).Inc()
	default:
		return dropped(DropUnknownLifecycle), nil
	}
	if !t.Retrieves() {
		return dropped(DropRetrievalOff), nil
	}
	if err := n.queueImport(ctx, t, reason, now); err != nil {
		return outcome{}, err
	}
	return outcome{kind: outQueued}, nil
}

// pick is the one candidate whose stored client state equals the item's
// (constant-time); a folder without one takes no notifications.
func pick(candidates []Target, clientState string) (Target, outcome, bool) {
	var match []Target
	for _, t := range candidates {
		if t.ClientState != "" && subtle.ConstantTimeCompare([]byte(t.ClientState), []byte(clientState)) == 1 {
			match = append(match, t)
		}
	}
	switch len(match) {
	case 1:
		return match[0], outcome{}, true
	case 0:
		return Target{}, dropped(DropForged), false
	default:
		return Target{}, dropped(DropAmbiguous), false
	}
}

func bucketOf(t time.Time) int64 { return t.UnixNano() / int64(contracts.MailImportBucket) }

// markNotified records last_notification_at at most once per folder and
// bucket (the first item of the bucket pays for it). It is bookkeeping: a
// failure is logged, not answered.
func (n *Notifier) markNotified(ctx context.Context, folderID int64, now time.Time) {
	b := bucketOf(now)
	n.mu.Lock()
	if n.marked[folderID] == b {
		n.mu.Unlock()
		return
	}
	n.marked[folderID] = b
	if len(n.marked) > 4*n.o.CacheSize {
		for id, mb := range n.marked {
			if mb < b-1 {
				delete(n.marked, id)
			}
		}
	}
	n.mu.Unlock()
	if err := n.store.MarkNotified(ctx, folderID, now); err != nil {
		n.log.WarnContext(ctx, "last notification time not recorded", "folderID", folderID, "error", err.Error())
	}
}

// queueImport queues the folder's import once per reason and bucket: a
// repeat of an acknowledged one costs nothing, and concurrent repeats wait
// for the first publish instead of publishing too. A failed publish records
// nothing, so the next item tries again.
func (n *Notifier) queueImport(ctx context.Context, t Target, reason string, now time.Time) error {
	key := importKey{folderID: t.Folder.ID, reason: reason, bucket: bucketOf(now)}
	if n.acknowledged(key) {
		return nil
	}
	msgID := contracts.MailImportMsgID(key.folderID, reason, now)
	_, err, _ := n.publishes.Do(msgID, func() (any, error) {
		if n.acknowledged(key) { // a flight that just ended
			return nil, nil
		}
		err := n.q.Import(ctx, contracts.MailImportRequest{CustomerID: t.Folder.CustomerID, ChannelID: t.Folder.ChannelID,
			FolderID: t.Folder.ID, Reason: reason, RequestedAt: now})
		if err != nil {
			return nil, err
		}
		n.m.publishes.Inc()
		n.mu.Lock()
		n.queued[key] = true
		if len(n.queued) > 4096 {
			for k := range n.queued {
				if k.bucket < key.bucket-1 {
					delete(n.queued, k)
				}
			}
		}
		n.mu.Unlock()
		return nil, nil
	})
	if err != nil {
		// Graph sends the notification again; Retry-After says when (a
		// NATS cluster elects a stream's leader in about a second).
		e := apperr.Wrap(apperr.Unavailable, err, "the folder import could not be queued; send the notification again")
		e.RetryAfterSeconds = 1
		return e
	}
	return nil
}

func (n *Notifier) acknowledged(k importKey) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.queued[k]
}

// parkItem parks an item of an unknown subscription id; false when the park
// is full (items or bytes).
func (n *Notifier) parkItem(it Notification, now time.Time) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	p := n.park[it.SubscriptionID]
	if p != nil {
		for _, pi := range p.items {
			if pi.n.ClientState == it.ClientState && pi.n.LifecycleEvent == it.LifecycleEvent {
				pi.count++
				return true
			}
		}
	}
	size := notificationBytes(it)
	if p == nil {
		size += parkIDOverhead + len(it.SubscriptionID)
	}
	if n.parkN >= n.o.ParkSize || n.parkB+size > n.o.ParkBytes {
		return false
	}
	if p == nil {
		p = &parkedID{since: now, next: now.Add(n.o.ParkFirstRetry)}
		n.park[it.SubscriptionID] = p
	}
	p.items = append(p.items, &parkedItem{n: it, count: 1})
	n.parkN++
	n.parkB += size
	return true
}

// parkedBytes is what parkItem counted for items of id, with the id's own
// entry when withID (the last of its items goes).
func parkedBytes(id string, items []*parkedItem, withID bool) int {
	b := 0
	for _, pi := range items {
		b += notificationBytes(pi.n)
	}
	if withID {
		b += parkIDOverhead + len(id)
	}
	return b
}

// ParkedBytes returns the estimated bytes the park holds.
func (n *Notifier) ParkedBytes() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.parkB
}

// Parked returns how many distinct items are parked.
func (n *Notifier) Parked() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.parkN
}

// Run retries the parked items until ctx ends or Close is called.
func (n *Notifier) Run(ctx context.Context) {
	n.runMu.Lock()
	if n.closed {
		n.runMu.Unlock()
		return
	}
	n.running.Add(1)
	n.runMu.Unlock()
	defer n.running.Done()
	tick := time.NewTicker(n.o.ParkTick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.closing:
			return
		case <-tick.C:
			n.retryParked(ctx)
		}
	}
}

// Close stops Run and waits until it has returned.
func (n *Notifier) Close() {
	n.runMu.Lock()
	if !n.closed {
		n.closed = true
		close(n.closing)
	}
	n.runMu.Unlock()
	n.running.Wait()
}

// retryParked looks the due parked ids up again (past the negative cache)
// and handles their items when found; ids past ParkMaxAge are dropped.
func (n *Notifier) retryParked(ctx context.Context) {
	now := n.now()
	var due []string
	n.mu.Lock()
	for id, p := range n.park {
		if now.Sub(p.since) >= n.o.ParkMaxAge {
			delete(n.park, id)
			n.parkN -= len(p.items)
			n.parkB -= parkedBytes(id, p.items, true)
			for _, pi := range p.items {
				n.count(&NotifyResult{}, dropped(DropParkedExpired), pi.count)
			}
			continue
		}
		if !p.next.After(now) {
			due = append(due, id)
		}
	}
	n.mu.Unlock()
	for _, id := range due {
		select {
		case <-ctx.Done():
			return
		case <-n.closing:
			return
		default:
		}
		ts, err := n.lookupSubscription(ctx, id, now, true)
		if errors.Is(err, errNoToken) {
			return // the budget is spent for now: the next tick goes on
		}
		if err != nil || len(ts) == 0 {
			if err != nil {
				n.log.WarnContext(ctx, "parked notification lookup failed", "error", err.Error())
			}
			n.backOff(id, now)
			continue
		}
		n.release(ctx, id, ts, now)
	}
}

func (n *Notifier) backOff(id string, now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	p := n.park[id]
	if p == nil {
		return
	}
	p.attempt++
	d := n.o.ParkFirstRetry << min(p.attempt, 20)
	if d > n.o.ParkMaxBackoff || d <= 0 {
		d = n.o.ParkMaxBackoff
	}
	p.next = now.Add(d)
}

// release handles the parked items of an id that is known now. Items that
// fail (the queue is down) stay parked for the next round.
func (n *Notifier) release(ctx context.Context, id string, ts []Target, now time.Time) {
	n.mu.Lock()
	p := n.park[id]
	var items []*parkedItem
	if p != nil {
		items = append(items, p.items...)
	}
	n.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, n.o.ParkItemBudget)
	defer cancel()
	var done []*parkedItem
	for _, pi := range items {
		o, err := n.handle(ctx, pi.n, ts, now)
		if err != nil {
			n.log.WarnContext(ctx, "parked notification not queued yet", "error", err.Error())
			break
		}
		n.mu.Lock()
		c := pi.count // repeats may have joined it meanwhile
		n.mu.Unlock()
		n.count(&NotifyResult{}, o, c)
		done = append(done, pi)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	p = n.park[id]
	if p == nil {
		return
	}
	var rest, gone []*parkedItem
	for _, pi := range p.items {
		if containsItem(done, pi) {
			gone = append(gone, pi)
		} else {
			rest = append(rest, pi)
		}
	}
	n.parkN -= len(gone)
	n.parkB -= parkedBytes(id, gone, len(rest) == 0)
	p.items = rest
	if len(rest) == 0 {
		delete(n.park, id)
	} else {
		p.attempt++
		p.next = now.Add(n.o.ParkFirstRetry)
	}
}

func containsItem(items []*parkedItem, pi *parkedItem) bool {
	for _, x := range items {
		if x == pi {
			return true
		}
	}
	return false
}
