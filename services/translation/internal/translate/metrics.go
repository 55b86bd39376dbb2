package translate

import "github.com/prometheus/client_golang/prometheus"

// Metrics count what the service decides on its own: translations that went through a pivot
// language (the answer does not say so) and how source languages were chosen. A nil *Metrics
// counts nothing.
type Metrics struct {
	pivots  *prometheus.CounterVec
	sources *prometheus.CounterVec
}

// NewMetrics registers the metrics on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		pivots: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "translation_pivot_total",
			Help: "Translations made through a pivot language because no provider serves the pair directly, by source, pivot and target language."},
			[]string{"source", "pivot", "target"}),
		sources: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "translation_source_total",
			Help: "Translations by how the source language was chosen (given, detected, candidates, unknown)."},
			[]string{"how"}),
	}
	for _, c := range []prometheus.Collector{m.pivots, m.sources} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, how := range []string{"given", "detected", "candidates", "unknown"} {
		m.sources.WithLabelValues(how)
	}
	return m, nil
}

func (m *Metrics) pivot(source, pivot, target string) {
	if m != nil {
		m.pivots.WithLabelValues(source, pivot, target).Inc()
	}
}

func (m *Metrics) source(how string) {
	if m != nil {
		m.sources.WithLabelValues(how).Inc()
	}
}
