package importer

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics count what the import worker does. A nil *Metrics counts nothing.
type Metrics struct {
	rounds      *prometheus.CounterVec
	duration    prometheus.Histogram
	published   prometheus.Counter
	skips       *prometheus.CounterVec
	resyncs     prometheus.Counter
	attachments *prometheus.CounterVec
}

// Round outcomes.
const (
	RoundOK        = "ok"
	RoundFailed    = "failed"
	RoundAbandoned = "abandoned" // cancelled by shutdown or a lost lock
)

// NewMetrics registers the metrics on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		rounds: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mail_import_rounds_total",
			Help: "Delta rounds of folder imports by outcome (ok, failed, abandoned)."}, []string{"outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "mail_import_round_duration_seconds",
			Help:    "Duration of delta rounds, whatever their outcome.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}}),
		published: prometheus.NewCounter(prometheus.CounterOpts{Name: "mail_import_messages_published_total",
			Help: "Mails published to MAIL_INBOUND (acknowledged by the stream; a repeat of an earlier round counts again)."}),
		skips: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mail_import_messages_skipped_total",
			Help: "Mails not published by reason (own: sent by the platform; gone: deleted before being fetched; too-big: no message could hold it, or Graph's reply exceeds 16 MiB; refused: Graph refused it with a lasting 4xx; undecodable: Graph's reply cannot be read)."}, []string{"reason"}),
		resyncs: prometheus.NewCounter(prometheus.CounterOpts{Name: "mail_import_resyncs_total",
			Help: "Full resyncs of the look-back window after Graph forgot a folder's delta link."}),
		attachments: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mail_import_attachments_total",
			Help: "Attachments of imported mails by result (stored, or why the bytes were not carried)."}, []string{"result"}),
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.rounds, m.duration, m.published, m.skips, m.resyncs, m.attachments} {
		errs = append(errs, reg.Register(c))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// Every series exists from the start, so that rates work at once.
	for _, o := range []string{RoundOK, RoundFailed, RoundAbandoned} {
		m.rounds.WithLabelValues(o)
	}
	for _, r := range []string{SkipOwn, SkipGone, SkipSize, SkipRefused, SkipUndecodable} {
		m.skips.WithLabelValues(r)
	}
	for _, r := range []string{"stored", SkippedTooLarge, SkippedItem, SkippedReference, SkippedGone, SkippedUnavailable} {
		m.attachments.WithLabelValues(r)
	}
	return m, nil
}

func (m *Metrics) round(outcome string, d time.Duration) {
	if m != nil {
		m.rounds.WithLabelValues(outcome).Inc()
		m.duration.Observe(d.Seconds())
	}
}

func (m *Metrics) publishedOne() {
	if m != nil {
		m.published.Inc()
	}
}

func (m *Metrics) skipped(reason string) {
	if m != nil {
		m.skips.WithLabelValues(reason).Inc()
	}
}

func (m *Metrics) resync() {
	if m != nil {
		m.resyncs.Inc()
	}
}

func (m *Metrics) attachment(skipped string) {
	if m == nil {
		return
	}
	if skipped == "" {
		skipped = "stored"
	}
	m.attachments.WithLabelValues(skipped).Inc()
}
