package replier

import "github.com/prometheus/client_golang/prometheus"

// Metrics count the replier's deliveries. A nil *Metrics counts nothing.
type Metrics struct {
	replies *prometheus.CounterVec
}

// NewMetrics registers the metrics on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{replies: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mail_replies_total",
		Help: "Deliveries of agents' replies by mail, by outcome (sent, retry, failed, unknown, skipped, duplicate, busy, invalid)."},
		[]string{"outcome"})}
	if err := reg.Register(m.replies); err != nil {
		return nil, err
	}
	// Every series exists from the start, so that rates work at once.
	for _, o := range outcomes {
		m.replies.WithLabelValues(o)
	}
	return m, nil
}

func (m *Metrics) count(outcome string) {
	if m != nil {
		m.replies.WithLabelValues(outcome).Inc()
	}
}
