package e2ekit

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/deploy/stack"
)

// LiveEvent is one Server-Sent Event of the live service, as an
// EventSource hands it over.
type LiveEvent struct {
	ID   uint64
	Type string
	Data map[string]any
	At   time.Time // when it was read
}

// LiveStream is an event stream open through the gateway, read as an
// EventSource would.
type LiveStream struct {
	t      *testing.T
	events chan LiveEvent
	// Close ends the stream (the test's cleanup does too).
	Close func()
}

// OpenLiveStream opens GET /api/live/events with the stream ticket, after
// lastID when it is not 0, through the stack's gateway.
func OpenLiveStream(t *testing.T, stk *stack.Stack, ticket string, lastID uint64) *LiveStream {
	t.Helper()
	query := "?ticket=" + ticket
	if lastID > 0 {
		query += "&lastEventId=" + strconv.FormatUint(lastID, 10)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, stk.HTTPSURL+"/api/live/events"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := stk.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body.Close()
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if ce := resp.Header.Get("Content-Encoding"); ce != "" {
		t.Fatalf("the gateway encoded the stream: %s", ce)
	}
	s := &LiveStream{t: t, events: make(chan LiveEvent, 256), Close: func() { resp.Body.Close() }}
	t.Cleanup(s.Close)
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		var e LiveEvent
		var data string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if e.Type != "" {
					e.At = time.Now()
					_ = json.Unmarshal([]byte(data), &e.Data)
					s.events <- e
				}
				e, data = LiveEvent{}, ""
			case strings.HasPrefix(line, "id: "):
				e.ID, _ = strconv.ParseUint(line[4:], 10, 64)
			case strings.HasPrefix(line, "event: "):
				e.Type = line[7:]
			case strings.HasPrefix(line, "data: "):
				data = line[6:]
			}
		}
	}()
	return s
}

// Until returns the first event for which match is true, failing after
// limit; the events before it are returned too.
func (s *LiveStream) Until(limit time.Duration, what string, match func(LiveEvent) bool) (LiveEvent, []LiveEvent) {
	s.t.Helper()
	deadline := time.After(limit)
	var before []LiveEvent
	for {
		select {
		case e, ok := <-s.events:
			if !ok {
				s.t.Fatalf("the stream ended before %s", what)
			}
			if match(e) {
				return e, before
			}
			before = append(before, e)
		case <-deadline:
			s.t.Fatalf("no %s within %v (got %+v)", what, limit, before)
		}
	}
}

// TicketCreated matches the ticket.created event of ticket id.
func TicketCreated(id int64) func(LiveEvent) bool {
	return func(e LiveEvent) bool { return e.Type == "ticket.created" && e.Data["ticketID"] == float64(id) }
}
