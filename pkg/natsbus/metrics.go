package natsbus

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// The consumer metrics. The gauges are JetStream's own view of a durable
// consumer (ConsumerInfo), asked at scrape time; every replica of a service
// reports the same consumer, so dashboards aggregate them with max, not sum.
// The deliveries counter is this process's share.
const (
	// consumerInfoTTL is how long one round of ConsumerInfo answers serves
	// scrapes: a scrape storm (several Prometheus servers, a dashboard
	// refreshing) asks NATS at most once per TTL.
	consumerInfoTTL = 1500 * time.Millisecond
	// consumerInfoTimeout bounds one round, so a slow NATS never holds a
	// scrape (Prometheus' default scrape timeout is 10 s).
	consumerInfoTimeout = 2 * time.Second
)

// Delivery outcomes (label outcome of jetstream_consumer_deliveries_total):
// how the handler settled a message, and redelivery for a message received
// again (NumDelivered > 1), whatever its outcome.
const (
	OutcomeAck        = "ack"
	OutcomeNak        = "nak"
	OutcomeTerm       = "term"
	OutcomeRedelivery = "redelivery"
)

var (
	pendingDesc = prometheus.NewDesc("jetstream_consumer_pending_messages",
		"Messages of the stream that match the durable consumer and were not delivered yet (JetStream NumPending).",
		[]string{"stream", "consumer"}, nil)
	ackPendingDesc = prometheus.NewDesc("jetstream_consumer_ack_pending_messages",
		"Messages delivered to the durable consumer and not acknowledged yet (JetStream NumAckPending).",
		[]string{"stream", "consumer"}, nil)
	redeliveredDesc = prometheus.NewDesc("jetstream_consumer_redelivered_messages",
		"Messages of the durable consumer delivered more than once and not acknowledged yet (JetStream NumRedelivered).",
		[]string{"stream", "consumer"}, nil)
)

type consumerKey struct{ stream, consumer string }

type consumerSample struct {
	consumerKey
	pending, ackPending, redelivered float64
}

// outcomeCounters are one consumer's deliveries counters, resolved once.
type outcomeCounters struct{ ack, nak, term, redelivery prometheus.Counter }

// consumerMetrics is the Bus's share of the metrics; its zero value is
// ready (the collectors are made on first use).
type consumerMetrics struct {
	once       sync.Once
	deliveries *prometheus.CounterVec
	infoErrors *prometheus.CounterVec

	mu       sync.Mutex
	watched  []consumerKey
	counters map[consumerKey]*outcomeCounters

	// scrape serialises the rounds of ConsumerInfo requests: a scrape that
	// arrives during a round waits for it and takes its answers.
	scrape   sync.Mutex
	cached   []consumerSample
	cachedAt time.Time
}

func (m *consumerMetrics) init() {
	m.once.Do(func() {
		m.deliveries = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "jetstream_consumer_deliveries_total",
			Help: "Messages received by this process's durable consumers, by how the handler settled them (ack, nak, term) " +
				"and redelivery for a message received more than once."}, []string{"stream", "consumer", "outcome"})
		m.infoErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "jetstream_consumer_info_errors_total",
			Help: "Scrapes that could not read a durable consumer's state from JetStream (its gauges are absent then)."},
			[]string{"stream", "consumer"})
		m.counters = map[consumerKey]*outcomeCounters{}
	})
}

// WatchConsumer adds a durable consumer of stream to the ones whose state
// Collector reports, with its deliveries counters at zero. Consume calls it;
// code that consumes with the jetstream API directly calls it once it has
// declared its consumer. Names are the full ones (with the deployment's
// prefix); watching one twice is harmless.
func (b *Bus) WatchConsumer(stream, durable string) {
	if stream == "" || durable == "" {
		return
	}
	m := &b.metrics
	m.init()
	k := consumerKey{stream, durable}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.counters[k]; ok {
		return
	}
	m.watched = append(m.watched, k)
	m.counters[k] = m.outcomeCounters(k)
	// A new consumer's state is shown at the next scrape.
	m.cachedAt = time.Time{}
}

func (m *consumerMetrics) outcomeCounters(k consumerKey) *outcomeCounters {
	c := func(o string) prometheus.Counter { return m.deliveries.WithLabelValues(k.stream, k.consumer, o) }
	m.infoErrors.WithLabelValues(k.stream, k.consumer)
	return &outcomeCounters{ack: c(OutcomeAck), nak: c(OutcomeNak), term: c(OutcomeTerm), redelivery: c(OutcomeRedelivery)}
}

// countDelivery counts m as received by the durable consumer of stream and
// returns it wrapped, so that how the handler settles it is counted too.
func (b *Bus) countDelivery(stream, durable string, m jetstream.Msg) jetstream.Msg {
	cm := &b.metrics
	cm.init()
	k := consumerKey{stream, durable}
	cm.mu.Lock()
	c, ok := cm.counters[k]
	if !ok {
		c = cm.outcomeCounters(k)
		cm.counters[k] = c
	}
	cm.mu.Unlock()
	if md, err := m.Metadata(); err == nil && md.NumDelivered > 1 {
		c.redelivery.Inc()
	}
	return countedMsg{Msg: m, c: c}
}

// countedMsg counts the settlements the server was sent: a second Ack of
// one message fails (ErrMsgAlreadyAckd) and is not counted again.
type countedMsg struct {
	jetstream.Msg
	c *outcomeCounters
}

func count(c prometheus.Counter, err error) error {
	if err == nil {
		c.Inc()
	}
	return err
}

func (m countedMsg) Ack() error { return count(m.c.ack, m.Msg.Ack()) }
func (m countedMsg) DoubleAck(ctx context.Context) error {
	return count(m.c.ack, m.Msg.DoubleAck(ctx))
}
func (m countedMsg) Nak() error { return count(m.c.nak, m.Msg.Nak()) }
func (m countedMsg) NakWithDelay(d time.Duration) error {
	return count(m.c.nak, m.Msg.NakWithDelay(d))
}
func (m countedMsg) Term() error { return count(m.c.term, m.Msg.Term()) }
func (m countedMsg) TermWithReason(reason string) error {
	return count(m.c.term, m.Msg.TermWithReason(reason))
}

// Collector exports the state of every durable consumer the bus watches
// (WatchConsumer) and their deliveries. pkg/boot registers it on the
// service's registry. A consumer whose state cannot be read (NATS down, the
// consumer deleted) has no gauges in that scrape and counts an error; the
// scrape itself never fails.
func (b *Bus) Collector() prometheus.Collector {
	b.metrics.init()
	return busCollector{b}
}

type busCollector struct{ b *Bus }

func (c busCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- pendingDesc
	ch <- ackPendingDesc
	ch <- redeliveredDesc
	c.b.metrics.deliveries.Describe(ch)
	c.b.metrics.infoErrors.Describe(ch)
}

func (c busCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.b.consumerSamples() {
		ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, s.pending, s.stream, s.consumer)
		ch <- prometheus.MustNewConstMetric(ackPendingDesc, prometheus.GaugeValue, s.ackPending, s.stream, s.consumer)
		ch <- prometheus.MustNewConstMetric(redeliveredDesc, prometheus.GaugeValue, s.redelivered, s.stream, s.consumer)
	}
	c.b.metrics.deliveries.Collect(ch)
	c.b.metrics.infoErrors.Collect(ch)
}

// consumerSamples returns the watched consumers' state, asked of JetStream
// at most once per consumerInfoTTL.
func (b *Bus) consumerSamples() []consumerSample {
	m := &b.metrics
	m.scrape.Lock()
	defer m.scrape.Unlock()
	now := b.now()
	m.mu.Lock()
	fresh := !m.cachedAt.IsZero() && now.Sub(m.cachedAt) < consumerInfoTTL && !now.Before(m.cachedAt)
	keys := append([]consumerKey(nil), m.watched...)
	m.mu.Unlock()
	if fresh {
		return m.cached
	}
	samples := make([]consumerSample, 0, len(keys))
	ctx, cancel := context.WithTimeout(context.Background(), consumerInfoTimeout)
	defer cancel()
	for _, k := range keys {
		// While disconnected a request would wait for the timeout in the
		// reconnect buffer: fail at once instead.
		if !b.NC.IsConnected() || ctx.Err() != nil {
			m.infoErrors.WithLabelValues(k.stream, k.consumer).Inc()
			continue
		}
		cons, err := b.JS.Consumer(ctx, k.stream, k.consumer)
		if err != nil {
			m.infoErrors.WithLabelValues(k.stream, k.consumer).Inc()
			continue
		}
		info := cons.CachedInfo()
		samples = append(samples, consumerSample{consumerKey: k, pending: float64(info.NumPending),
			ackPending: float64(info.NumAckPending), redelivered: float64(info.NumRedelivered)})
	}
	m.mu.Lock()
	m.cached, m.cachedAt = samples, now
	m.mu.Unlock()
	return samples
}
