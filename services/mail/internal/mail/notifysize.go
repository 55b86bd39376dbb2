package mail

import (
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Graph's real sizes of a notification item's fields (bytes). The public
// callback takes any body up to MAX_BODY_BYTES from anyone, so an item
// whose field is larger than Graph ever sends is dropped before it reaches
// the rate limiter, the lookup cache or the park, which would otherwise keep
// attacker-sized strings for minutes.
const (
	// MaxNotifySubscriptionIDLen: subscription ids are GUIDs (36 characters).
	MaxNotifySubscriptionIDLen = 36
	// MaxNotifyTenantIDLen: tenant ids are GUIDs too.
	MaxNotifyTenantIDLen = 36
	// MaxNotifyClientStateLen: Graph allows at most 128 characters of
	// clientState (ours are 43).
	MaxNotifyClientStateLen = 128
	// MaxNotifyResourceLen bounds resource: real ones name a message
	// (Users/{GUID}/Messages/{id}, about 200 characters).
	MaxNotifyResourceLen = 1024
	// MaxNotifyResourceIDLen bounds resourceData.id (a message id, about
	// 150 characters).
	MaxNotifyResourceIDLen = 512
)

// changeTypes are Graph's change types; a notification item carries one.
var changeTypes = []string{"created", "updated", "deleted"}

// lifecycleEvents are Graph's lifecycle events.
var lifecycleEvents = []string{LifecycleReauthorizationRequired, LifecycleSubscriptionRemoved, LifecycleMissed}

// CheckNotification reports the first field of it that Graph would never
// send: longer than Graph's sizes, not UTF-8, or a changeType or
// lifecycleEvent that is not one of Graph's. "" when it is well-formed.
// Empty fields are left to the notifier (a lifecycle item has no
// changeType, a real change item no lifecycleEvent).
func CheckNotification(it Notification) string {
	switch {
	case !sized(it.SubscriptionID, MaxNotifySubscriptionIDLen):
		return "subscriptionId"
	case !sized(it.ClientState, MaxNotifyClientStateLen):
		return "clientState"
	case !sized(it.Resource, MaxNotifyResourceLen):
		return "resource"
	case !sized(it.ResourceID, MaxNotifyResourceIDLen):
		return "resourceData.id"
	case !sized(it.TenantID, MaxNotifyTenantIDLen):
		return "tenantId"
	case it.ChangeType != "" && !oneOf(it.ChangeType, changeTypes):
		return "changeType"
	case it.LifecycleEvent != "" && !oneOf(it.LifecycleEvent, lifecycleEvents):
		return "lifecycleEvent"
	}
	return ""
}

func sized(s string, max int) bool { return len(s) <= max && utf8.ValidString(s) }

// oneOf compares without case: Graph spells them in camel case, but a
// case difference is no sign of a forgery worth a drop.
func oneOf(s string, values []string) bool {
	for _, v := range values {
		if strings.EqualFold(s, v) {
			return true
		}
	}
	return false
}

// dropLog logs dropped malformed items at most once per window, with how
// many there were since the last line and the last field at fault (never
// the value): a flood must not become a flood of log lines.
type dropLog struct {
	mu      sync.Mutex
	window  time.Duration
	last    time.Time
	pending int
	field   string
	size    int
}

func (d *dropLog) add(log *slog.Logger, field string, size int, now time.Time) {
	d.mu.Lock()
	d.pending++
	d.field, d.size = field, size
	if !d.last.IsZero() && now.Sub(d.last) < d.window {
		d.mu.Unlock()
		return
	}
	n, f, sz := d.pending, d.field, d.size
	d.pending, d.last = 0, now
	d.mu.Unlock()
	log.Warn("provider notifications dropped: a field exceeds Graph's sizes or values", "dropped", n,
		"lastField", f, "lastFieldBytes", sz, "window", d.window.String())
}

// fieldSize is the size of the named field of it, for the log.
func fieldSize(it Notification, field string) int {
	switch field {
	case "subscriptionId":
		return len(it.SubscriptionID)
	case "clientState":
		return len(it.ClientState)
	case "resource":
		return len(it.Resource)
	case "resourceData.id":
		return len(it.ResourceID)
	case "tenantId":
		return len(it.TenantID)
	case "changeType":
		return len(it.ChangeType)
	case "lifecycleEvent":
		return len(it.LifecycleEvent)
	}
	return 0
}

// notificationBytes estimates what a parked item holds: its strings and a
// fixed overhead for the structs and slices around it.
func notificationBytes(it Notification) int {
	return parkItemOverhead + len(it.SubscriptionID) + len(it.ClientState) + len(it.ChangeType) + len(it.Resource) +
		len(it.ResourceID) + len(it.TenantID) + len(it.LifecycleEvent)
}

// Fixed per-entry overheads (bytes) counted by the byte bounds: map
// entries, headers of strings and slices, the structs themselves.
const (
	parkItemOverhead    = 256
	parkIDOverhead      = 128
	limiterKeyOverhead  = 128
	cacheEntryOverhead  = 128
	cacheTargetOverhead = 512
)
