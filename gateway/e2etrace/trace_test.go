package e2etrace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/graphfake"
	"supportplatform.dev/pkg/randid"
	"supportplatform.dev/pkg/telemetry/otlptest"
)

// Traefik exports its spans every 5 s; the services every 200 ms.
const spanWait = 30 * time.Second

func client(t testing.TB) *e2ekit.Client {
	return e2ekit.NewClient(t, stk.HTTPSURL, stk.HTTPClient(), api)
}

// spans is one trace's received spans.
type spans []otlptest.Span

func (ss spans) find(service, kind, name string) (otlptest.Span, bool) {
	for _, s := range ss {
		if s.Service == service && s.Kind == kind && (name == "" || s.Name == name) {
			return s, true
		}
	}
	return otlptest.Span{}, false
}

func (ss spans) byID(id string) (otlptest.Span, bool) {
	for _, s := range ss {
		if s.SpanID == id {
			return s, true
		}
	}
	return otlptest.Span{}, false
}

// descends reports whether s is a descendant of ancestor (through its
// parents, all in ss).
func (ss spans) descends(s otlptest.Span, ancestor otlptest.Span) bool {
	for s.ParentSpanID != "" {
		if s.ParentSpanID == ancestor.SpanID {
			return true
		}
		var ok bool
		if s, ok = ss.byID(s.ParentSpanID); !ok {
			return false
		}
	}
	return false
}

func (ss spans) String() string {
	var b strings.Builder
	for _, s := range ss {
		fmt.Fprintln(&b, s.String())
	}
	return b.String()
}

// need fails t unless ss has the span, and returns it.
func (ss spans) need(t *testing.T, service, kind, name string) otlptest.Span {
	t.Helper()
	s, ok := ss.find(service, kind, name)
	if !ok {
		t.Fatalf("no %s %s span %q in the trace:\n%s", service, kind, name, ss)
	}
	return s
}

// fromGateway fails t unless the service's server span is the child of a
// Traefik span of the trace (Traefik passed its own span on).
func (ss spans) fromGateway(t *testing.T, server otlptest.Span) {
	t.Helper()
	parent, ok := ss.byID(server.ParentSpanID)
	if !ok || parent.Service != "traefik" {
		t.Errorf("%s's parent %s is not a Traefik span of the trace:\n%s", server.Name, server.ParentSpanID, ss)
	}
}

// waitTrace waits until the trace's spans satisfy ok.
func waitTrace(t *testing.T, traceID, what string, ok func(spans) bool) spans {
	t.Helper()
	receiver.WaitFor(t, spanWait, what, func([]otlptest.Span) bool { return ok(spans(receiver.Trace(traceID))) })
	return spans(receiver.Trace(traceID))
}

// A client's own trace context goes through Traefik into topics, and the
// topic change topics publishes through its outbox continues it into the
// tickets service that consumes it: one trace id in Traefik, topics and
// tickets, each span the child of the one before.
func TestTopicChangeIsOneTraceThroughTheOutboxIntoTickets(t *testing.T) {
	c := client(t)
	tn := e2ekit.NewTenant(t, stk, c, "Trace")
	var topic struct {
		TopicID int64 `json:"topicID"`
	}
	e2ekit.WantStatus(t, c.Do(http.MethodPost, "/api/Topics", tn.AdminToken, map[string]any{"name": "Billing " + randid.Hex(4)}),
		http.StatusCreated, &topic)

	traceID, callerSpan := randid.Hex(16), randid.Hex(8)
	body, _ := json.Marshal(map[string]any{"name": "Invoices " + randid.Hex(4)})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, fmt.Sprintf("%s/api/Topics/%d", stk.HTTPSURL, topic.TopicID), bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tn.AdminToken)
	req.Header.Set("traceparent", "00-"+traceID+"-"+callerSpan+"-01")
	e2ekit.WantStatus(t, c.DoRequest(req), http.StatusNoContent, nil)

	ss := waitTrace(t, traceID, "Traefik, topics and the tickets consumer in the trace", func(ss spans) bool {
		_, gw := ss.find("traefik", "server", "")
		_, pub := ss.find("topics", "producer", "send events.topic.updated")
		_, con := ss.find("tickets", "consumer", "process events.topic.updated")
		return gw && pub && con
	})
	gateway := ss.need(t, "traefik", "server", "")
	if gateway.ParentSpanID != callerSpan {
		t.Errorf("Traefik's span has parent %q, want the caller's %s", gateway.ParentSpanID, callerSpan)
	}
	server := ss.need(t, "topics", "server", "PUT /api/Topics/:id")
	ss.fromGateway(t, server)
	producer := ss.need(t, "topics", "producer", "send events.topic.updated")
	if !ss.descends(producer, server) {
		t.Errorf("the outbox publish is not under the request's span:\n%s", ss)
	}
	consumer := ss.need(t, "tickets", "consumer", "process events.topic.updated")
	if consumer.ParentSpanID != producer.SpanID {
		t.Errorf("tickets' consumer span has parent %s, want the producer span %s", consumer.ParentSpanID, producer.SpanID)
	}
	// The consumer's SQL (the topic's new name in tickets) is in it too.
	waitTrace(t, traceID, "the tickets consumer's SQL", func(ss spans) bool {
		for _, s := range ss {
			if s.Service == "tickets" && s.Kind == "client" && s.Attributes["db.system.name"] == "postgresql" && ss.descends(s, consumer) {
				return true
			}
		}
		return false
	})
}

// A mail delivered in the fake Graph is notified through Traefik to
// mailingest, queued on MAIL_IMPORT, imported by the import worker (its
// Graph calls), handed on over MAIL_INBOUND and made a ticket by tickets:
// one trace from the notification to the ticket.
func TestMailNotificationIsOneTraceIntoTickets(t *testing.T) {
	c := client(t)
	tn := e2ekit.NewTenant(t, stk, c, "TraceMail")
	ch, _ := e2ekit.SubscribedFolder(t, c, graph, tn)
	deliver := func(n int) string {
		subject := fmt.Sprintf("Traced %d %s", n, randid.Hex(4))
		id, err := graph.Deliver(t.Context(), graphfake.DeliverMail{Mailbox: *ch.EmailAddress, Subject: subject,
			From: graphfake.Address{Name: "Ann", Address: "ann-" + randid.Hex(4) + "@customer.example"}, Text: "Where is my invoice?"})
		if err != nil {
			t.Fatal(err)
		}
		e2ekit.Eventually(t, 30*time.Second, "the mail's ticket", func() bool {
			var l e2ekit.List[struct {
				Subject string `json:"subject"`
			}]
			e2ekit.WantStatus(t, c.Do(http.MethodGet, fmt.Sprintf("/api/Tickets?channelId=%d", ch.ChannelID), tn.AgentToken, nil), http.StatusOK, &l)
			return len(l.Items) == n && l.Items[0].Subject == subject
		})
		return id
	}
	// The channel's creation queued an import of its inbox, which may find
	// a first mail before that mail's notification does: the second one is
	// the notification's.
	deliver(1)
	mailID := deliver(2)

	// The import worker's hand-over of the mail names the trace.
	msgID := fmt.Sprintf("mail.%d.%s", ch.ChannelID, mailID)
	var handOver otlptest.Span
	receiver.WaitFor(t, spanWait, "the import worker's MAIL_INBOUND publish of "+msgID, func(all []otlptest.Span) bool {
		for _, s := range all {
			if s.Service == "importreply" && s.Kind == "producer" && s.Attributes["messaging.message.id"] == msgID {
				handOver = s
				return true
			}
		}
		return false
	})
	var stored otlptest.Span
	ss := waitTrace(t, handOver.TraceID, "every hop of the mail in one trace", func(ss spans) bool {
		_, gw := ss.find("traefik", "server", "")
		for _, s := range ss {
			if s.Service == "tickets" && s.Kind == "consumer" && s.ParentSpanID == handOver.SpanID {
				stored = s
			}
		}
		return gw && stored.SpanID != ""
	})
	if stored.Name != "process mail.inbound.*" {
		t.Errorf("tickets' span under the hand-over is %q", stored.Name)
	}
	imported, ok := ss.byID(handOver.ParentSpanID)
	if !ok || imported.Service != "importreply" || imported.Kind != "consumer" || imported.Name != "process mail.import.*" {
		t.Fatalf("the MAIL_INBOUND publish's parent is %v, want the import worker's consumer span:\n%s", imported, ss)
	}
	queued, ok := ss.byID(imported.ParentSpanID)
	if !ok || queued.Service != "mailingest" || queued.Kind != "producer" || queued.Name != "send mail.import.*" {
		t.Fatalf("the import's parent is %v, want mailingest's MAIL_IMPORT publish:\n%s", queued, ss)
	}
	server := ss.need(t, "mailingest", "server", "POST /api/ProviderWebhook")
	if !ss.descends(queued, server) {
		t.Errorf("the import request is not under the notification's span:\n%s", ss)
	}
	ss.fromGateway(t, server)
	graphCall := false
	for _, s := range ss {
		if s.Service == "importreply" && s.Kind == "client" && s.Attributes["http.request.method"] != "" && ss.descends(s, imported) {
			graphCall = true
		}
	}
	if !graphCall {
		t.Errorf("no Graph call of the import in the trace:\n%s", ss)
	}
}

// A refused request: the problem body's traceId is the trace Traefik began
// for it, the service's span is in it, and the service's log lines about
// the request carry it.
func TestProblemCarriesTheTraceID(t *testing.T) {
	c := client(t)
	tn := e2ekit.NewTenant(t, stk, c, "TraceProblem")
	r := c.Do(http.MethodPost, "/api/Topics", tn.AdminToken, `{"name": 5}`)
	var p struct {
		Status    int    `json:"status"`
		RequestID string `json:"requestId"`
		TraceID   string `json:"traceId"`
	}
	e2ekit.WantStatus(t, r, http.StatusBadRequest, nil)
	r.JSON(t, &p)
	if len(p.TraceID) != 32 || strings.Trim(p.TraceID, "0") == "" {
		t.Fatalf("problem traceId %q: %s", p.TraceID, r)
	}
	ss := waitTrace(t, p.TraceID, "Traefik's and topics' spans of the refused request", func(ss spans) bool {
		_, gw := ss.find("traefik", "server", "")
		_, srv := ss.find("topics", "server", "POST /api/Topics")
		return gw && srv
	})
	root := ss.need(t, "traefik", "server", "")
	if root.ParentSpanID != "" {
		t.Errorf("Traefik did not begin the trace: its span has parent %s", root.ParentSpanID)
	}
	server := ss.need(t, "topics", "server", "POST /api/Topics")
	ss.fromGateway(t, server)
	if server.Attributes["http.response.status_code"] != "400" {
		t.Errorf("topics' span status %q, want 400", server.Attributes["http.response.status_code"])
	}

	// The access log line of the request names the trace.
	e2ekit.Eventually(t, 10*time.Second, "a topics log line with the trace id", func() bool {
		data, err := os.ReadFile(stk.LogFile("topics"))
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.SplitSeq(string(data), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) != nil {
				continue
			}
			if rec["traceId"] == p.TraceID && rec["requestId"] == p.RequestID && rec["spanId"] == server.SpanID {
				return true
			}
		}
		return false
	})
}
