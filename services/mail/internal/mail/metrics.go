package mail

import (
	"errors"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
)

// Reasons a notification is dropped (label of mail_notifications_dropped_total).
const (
	DropForged           = "forged"            // clientState missing or wrong
	DropUnknown          = "unknown"           // no folder, and not parked
	DropRetrievalOff     = "retrieval-off"     // the folder or channel does not retrieve
	DropRateLimited      = "rate-limited"      // over the subscription's rate
	DropParkedExpired    = "parked-expired"    // parked, and its subscription never became known
	DropUnknownLifecycle = "unknown-lifecycle" // a lifecycle event this service does not know
	DropUnparseable      = "unparseable"       // neither a subscription id nor a folder resource
	DropAmbiguous        = "ambiguous"         // the resource names several folders and clientState does not tell them apart
	DropMalformed        = "malformed"         // a field exceeds Graph's sizes, or a changeType or lifecycleEvent Graph does not have
	DropParkFull         = "park-full"         // a create is in flight for it, but the park is full (items or bytes)
)

// notifyMetrics are the notifier's collectors.
type notifyMetrics struct {
	received  prometheus.Counter
	queued    prometheus.Counter
	dropped   *prometheus.CounterVec
	parked    prometheus.Counter
	lifecycle *prometheus.CounterVec
	publishes prometheus.Counter
	lookups   prometheus.Counter
}

// newNotifyMetrics registers the collectors on reg (nil: not exported). A
// collector already registered there (a second notifier on one registry) is
// shared rather than a reason to fail.
func newNotifyMetrics(reg *prometheus.Registry, log *slog.Logger) *notifyMetrics {
	m := &notifyMetrics{
		received: prometheus.NewCounter(prometheus.CounterOpts{Name: "mail_notifications_received_total",
			Help: "Provider notification items received."}),
		queued: prometheus.NewCounter(prometheus.CounterOpts{Name: "mail_notifications_queued_total",
			Help: "Notification items covered by a durably queued folder import (coalesced repeats included)."}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mail_notifications_dropped_total",
			Help: "Notification items dropped (still answered 2xx), by reason."}, []string{"reason"}),
		parked: prometheus.NewCounter(prometheus.CounterOpts{Name: "mail_notifications_parked_total",
			Help: "Notification items parked because their subscription id was not known yet."}),
		lifecycle: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mail_notifications_lifecycle_total",
			Help: "Lifecycle notification items acted on, by event."}, []string{"event"}),
		publishes: prometheus.NewCounter(prometheus.CounterOpts{Name: "mail_import_publishes_total",
			Help: "Import requests published to JetStream by the notification path (after in-process coalescing)."}),
		lookups: prometheus.NewCounter(prometheus.CounterOpts{Name: "mail_notification_lookups_total",
			Help: "Database lookups of subscription ids and mailboxes by the notification path."}),
	}
	if reg == nil {
		return m
	}
	register := func(c prometheus.Collector) prometheus.Collector {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return are.ExistingCollector
			}
			log.Warn("metric not registered", "error", err.Error())
		}
		return c
	}
	m.received = register(m.received).(prometheus.Counter)
	m.queued = register(m.queued).(prometheus.Counter)
	m.dropped = register(m.dropped).(*prometheus.CounterVec)
	m.parked = register(m.parked).(prometheus.Counter)
	m.lifecycle = register(m.lifecycle).(*prometheus.CounterVec)
	m.publishes = register(m.publishes).(prometheus.Counter)
	m.lookups = register(m.lookups).(prometheus.Counter)
	for _, r := range []string{DropForged, DropUnknown, DropRetrievalOff, DropRateLimited, DropParkedExpired,
		DropUnknownLifecycle, DropUnparseable, DropAmbiguous, DropMalformed, DropParkFull} {
		m.dropped.WithLabelValues(r) // exported at 0 from the start
	}
	for _, e := range []string{LifecycleReauthorizationRequired, LifecycleSubscriptionRemoved, LifecycleMissed} {
		m.lifecycle.WithLabelValues(e)
	}
	return m
}
