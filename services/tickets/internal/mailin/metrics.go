package mailin

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"supportplatform.dev/services/tickets/internal/tickets"
)

// Metrics count imported mails by outcome and time their handling. A nil
// *Metrics counts nothing.
type Metrics struct {
	imported *prometheus.CounterVec
	duration prometheus.Histogram
}

// NewMetrics registers the metrics on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		imported: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tickets_mail_imported_total",
			Help: "Inbound mails handled, by outcome (new-ticket, joined-ticket, duplicate, rejected)."}, []string{"outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "tickets_mail_import_duration_seconds",
			Help:    "Time to handle one inbound mail (attachment copies included), by handlings that reached an outcome.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}}),
	}
	for _, o := range []tickets.MailOutcome{tickets.MailNewTicket, tickets.MailJoined, tickets.MailDuplicate, tickets.MailRejected} {
		m.imported.WithLabelValues(string(o)) // exported at 0 from the start
	}
	if err := errors.Join(reg.Register(m.imported), reg.Register(m.duration)); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Metrics) observe(o tickets.MailOutcome, d time.Duration) {
	if m == nil {
		return
	}
	m.imported.WithLabelValues(string(o)).Inc()
	m.duration.Observe(d.Seconds())
}
