package worker

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"supportplatform.dev/services/tickets/internal/assistant"
)

// Metrics count the assistant's work by kind and outcome and time the
// engine's calls. A nil *Metrics counts nothing.
type Metrics struct {
	work    *prometheus.CounterVec
	latency *prometheus.HistogramVec
}

// NewMetrics registers the metrics on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		work: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "assistant_work_total",
			Help: "Work done on messages by kind (detect, reply) and outcome (assigned, no-topic, manual-kept, prepared, no-reply, kept, gone, error)."},
			[]string{"kind", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "assistant_engine_duration_seconds",
			Help:    "Time of the engine's calls by operation (detect-topics, rank-documents, prepare-reply, summarize) and the engine that answered (error when none did).",
			Buckets: []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}}, []string{"operation", "engine"}),
	}
	for _, k := range []string{KindDetect, KindReply} {
		for _, o := range []string{OutcomeAssigned, OutcomeNoTopic, OutcomeManualKept, OutcomePrepared, OutcomeNoReply,
			OutcomeKept, OutcomeGone, OutcomeError} {
			if (k == KindDetect) == (o == OutcomeAssigned || o == OutcomeNoTopic || o == OutcomeManualKept) ||
				o == OutcomeGone || o == OutcomeError {
				m.work.WithLabelValues(k, o) // exported at 0 from the start
			}
		}
	}
	if err := errors.Join(reg.Register(m.work), reg.Register(m.latency)); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Metrics) done(kind, outcome string) {
	if m != nil {
		m.work.WithLabelValues(kind, outcome).Inc()
	}
}

func (m *Metrics) observe(operation string, start time.Time, p assistant.Provenance, err error) {
	if m == nil {
		return
	}
	engine := p.Engine
	if err != nil || engine == "" {
		engine = "error"
	}
	m.latency.WithLabelValues(operation, engine).Observe(time.Since(start).Seconds())
}

// instrument times e's calls (e itself with nil metrics).
func (m *Metrics) instrument(e assistant.Engine) assistant.Engine {
	if m == nil {
		return e
	}
	return timed{e: e, m: m}
}

type timed struct {
	e assistant.Engine
	m *Metrics
}

func (t timed) DetectTopics(ctx context.Context, text string, topics []assistant.Topic) ([]assistant.TopicScore, assistant.Provenance, error) {
	start := time.Now()
	s, p, err := t.e.DetectTopics(ctx, text, topics)
	t.m.observe("detect-topics", start, p, err)
	return s, p, err
}

func (t timed) RankDocuments(ctx context.Context, text string, docs []assistant.Document) ([]assistant.RankedDocument, assistant.Provenance, error) {
	start := time.Now()
	r, p, err := t.e.RankDocuments(ctx, text, docs)
	t.m.observe("rank-documents", start, p, err)
	return r, p, err
}

func (t timed) PrepareReply(ctx context.Context, r assistant.ReplyRequest) (assistant.Reply, assistant.Provenance, error) {
	start := time.Now()
	out, p, err := t.e.PrepareReply(ctx, r)
	t.m.observe("prepare-reply", start, p, err)
	return out, p, err
}

func (t timed) Summarize(ctx context.Context, subject, status string, turns []assistant.Turn) (string, assistant.Provenance, error) {
	start := time.Now()
	s, p, err := t.e.Summarize(ctx, subject, status, turns)
	t.m.observe("summarize", start, p, err)
	return s, p, err
}
