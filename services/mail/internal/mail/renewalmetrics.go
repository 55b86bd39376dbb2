package mail

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// SubscriptionMetrics count what the subscription service and the renewal
// job do at the provider. A nil *SubscriptionMetrics counts nothing.
type SubscriptionMetrics struct {
	renewals *prometheus.CounterVec
	expiring prometheus.Gauge
	creates  *prometheus.CounterVec
	deletes  *prometheus.CounterVec
	orphans  prometheus.Counter
	rounds   *prometheus.CounterVec
}

// Renewal results.
const (
	RenewalOK        = "ok"
	RenewalFailed    = "failed"
	RenewalRecreated = "recreated"
)

// NewSubscriptionMetrics registers the metrics on reg.
func NewSubscriptionMetrics(reg prometheus.Registerer) (*SubscriptionMetrics, error) {
	m := &SubscriptionMetrics{
		renewals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mail_subscription_renewals_total",
			Help: "Provider subscription renewals by result (ok, failed, recreated after the provider had deleted it)."}, []string{"result"}),
		expiring: prometheus.NewGauge(prometheus.GaugeOpts{Name: "mail_subscriptions_expiring",
			Help: "Provider subscriptions expiring within the renewal window at the start of the last round."}),
		creates: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mail_subscription_creates_total",
			Help: "Provider subscription creations by result (ok, failed)."}, []string{"result"}),
		deletes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mail_subscription_deletes_total",
			Help: "Deletions of retired provider subscriptions by result (ok, failed)."}, []string{"result"}),
		orphans: prometheus.NewCounter(prometheus.CounterOpts{Name: "mail_subscription_orphans_deleted_total",
			Help: "Provider subscriptions deleted as orphans: made by a create whose answer never came (a timeout or a 5xx)."}),
		rounds: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mail_renewal_rounds_total",
			Help: "Renewal rounds run by this process, by result (ok, failed: the store failed)."}, []string{"result"}),
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.renewals, m.expiring, m.creates, m.deletes, m.orphans, m.rounds} {
		errs = append(errs, reg.Register(c))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// Every series exists from the start, so that rates work at once.
	for _, r := range []string{RenewalOK, RenewalFailed, RenewalRecreated} {
		m.renewals.WithLabelValues(r)
	}
	for _, r := range []string{"ok", "failed"} {
		m.creates.WithLabelValues(r)
		m.deletes.WithLabelValues(r)
		m.rounds.WithLabelValues(r)
	}
	return m, nil
}

func okOrFailed(ok bool) string {
	if ok {
		return "ok"
	}
	return "failed"
}

func (m *SubscriptionMetrics) renewal(result string) {
	if m != nil {
		m.renewals.WithLabelValues(result).Inc()
	}
}

func (m *SubscriptionMetrics) setExpiring(n int) {
	if m != nil {
		m.expiring.Set(float64(n))
	}
}

func (m *SubscriptionMetrics) create(ok bool) {
	if m != nil {
		m.creates.WithLabelValues(okOrFailed(ok)).Inc()
	}
}

func (m *SubscriptionMetrics) delete(ok bool) {
	if m != nil {
		m.deletes.WithLabelValues(okOrFailed(ok)).Inc()
	}
}

func (m *SubscriptionMetrics) orphan() {
	if m != nil {
		m.orphans.Inc()
	}
}

func (m *SubscriptionMetrics) round(ok bool) {
	if m != nil {
		m.rounds.WithLabelValues(okOrFailed(ok)).Inc()
	}
}
