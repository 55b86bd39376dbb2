package e2erecovery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/randid"
)

// A replica of topics gets SIGTERM while several clients create topics on
// it as fast as they can. Every request it accepted is answered in full
// (201 with the topic), including those under way when the signal came;
// it exits cleanly (status 0) once they are done; a request it did not
// accept is refused at the door and wrote nothing; and every topic it
// answered 201 for exists and has its event in JetStream.
func TestSIGTERMUnderLoad(t *testing.T) {
	f := newFixture(t)
	r, err := stk.StartReplica(t.Context(), "topics")
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		name           string
		status         int
		err            error
		id             int64
		started, ended time.Time
	}
	var (
		mu      sync.Mutex
		results []result
		sent    atomic.Int64
	)
	// A fresh connection per request: a request is either accepted by the
	// listener or refused, never sent on a kept-alive connection the
	// server is closing.
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	run := randid.Hex(3)
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			for {
				name := fmt.Sprintf("Shutdown %s %d", run, sent.Add(1))
				res := result{name: name, started: time.Now()}
				body, _ := json.Marshal(map[string]string{"name": name, "description": "written during a shutdown"})
				req, _ := http.NewRequest(http.MethodPost, r.URL+"/api/Topics", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+f.tn.AdminToken)
				resp, err := client.Do(req)
				if err == nil {
					res.status = resp.StatusCode
					var tp struct {
						TopicID int64 `json:"topicID"`
					}
					data, rerr := io.ReadAll(resp.Body)
					resp.Body.Close()
					if rerr != nil {
						err = rerr
					} else if json.Unmarshal(data, &tp) == nil {
						res.id = tp.TopicID
					}
				}
				res.err, res.ended = err, time.Now()
				mu.Lock()
				results = append(results, res)
				mu.Unlock()
				if err != nil {
					return // the replica is gone
				}
			}
		})
	}
	// The load is under way: answers are coming back.
	e2ekit.Eventually(t, 20*time.Second, "30 answers to the load", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(results) >= 30
	})
	signalled := time.Now()
	stopErr := r.Stop()
	stopped := time.Now()
	wg.Wait()
	if stopErr != nil {
		t.Fatalf("the replica did not exit cleanly after SIGTERM: %v", stopErr)
	}

	var created []int64
	var notAccepted []string
	spanning := 0
	for _, res := range results {
		switch {
		case res.err == nil && res.status == http.StatusCreated && res.id > 0:
			created = append(created, res.id)
			if res.started.Before(signalled) && res.ended.After(signalled) {
				spanning++
			}
		case res.err == nil:
			t.Errorf("%s: status %d", res.name, res.status)
		case errors.Is(res.err, syscall.ECONNREFUSED) || errors.Is(res.err, syscall.ECONNRESET) || errors.Is(res.err, io.EOF):
			// Refused at the door (or reset while waiting in the listen
			// queue when the listener closed): nothing may have been
			// written, which is checked below.
			notAccepted = append(notAccepted, res.name)
		default:
			t.Errorf("%s: %v", res.name, res.err)
		}
	}
	t.Logf("%d topics created, %d under way when SIGTERM came; %d requests not accepted; the replica exited %s after the signal",
		len(created), spanning, len(notAccepted), stopped.Sub(signalled).Round(time.Millisecond))
	if len(created) == 0 {
		t.Fatal("no topic was created")
	}
	if spanning == 0 {
		t.Error("no request was under way when SIGTERM came: the test proved nothing about in-flight requests")
	}
	var n int
	if err := backends.DB.QueryRow(t.Context(), "SELECT count(*) FROM topics.topics WHERE topic_id = ANY($1)", created).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != len(created) {
		t.Errorf("%d of the %d topics answered 201 exist", n, len(created))
	}
	if err := backends.DB.QueryRow(t.Context(), "SELECT count(*) FROM topics.topics WHERE name = ANY($1)", notAccepted).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d requests were cut: their topics were written but the client got no answer", n)
	}
	// Relayed by the replica before it exited, or by the stack's own
	// topics process from the shared outbox table.
	seen := map[int64]bool{}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for ctx.Err() == nil && len(seen) < len(created) {
		for _, data := range eventsOf(t, contracts.EventTopicCreated, f.tn.CustomerID) {
			if id, ok := data["topicID"].(float64); ok {
				seen[int64(id)] = true
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, id := range created {
		if !seen[id] {
			t.Errorf("topic %d: its topic.created event never reached JetStream", id)
		}
	}
}
