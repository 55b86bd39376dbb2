package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"supportplatform.dev/deploy/stack"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/randid"
)

// The mail callback cases: Microsoft Graph's change notifications posted to
// the public callback through the gateway, for subscriptions the fake Graph
// made through the real subscribe path (handshake included).

const (
	// mailFolders are the subscribed inboxes the measured case notifies in
	// turn (one channel each).
	mailFolders = 16
	// burstNotifications go to one folder as fast as the workers can send
	// them, before the measured run: how many imports do they queue?
	burstNotifications = 10_000
)

// mailTarget is one subscribed folder as Graph's notifications name it.
type mailTarget struct {
	subscriptionID, clientState string
	mailbox                     string
	channelID                   int64
}

// notificationBody is one created-message notification as Graph sends it
// (its documentation's shape: the resource names the message, not the
// folder).
func notificationBody(t mailTarget, n uint64) string {
	msg := "AAMkAGI2TG93AAA" + strconv.FormatUint(n, 36)
	user := "71f9cdd1-5d0c-4d36-b8e9-1d2bd2e0a6b2"
	return `{"value":[{"subscriptionId":"` + t.subscriptionID + `","subscriptionExpirationDateTime":"2030-01-01T00:00:00.0000000Z",` +
		`"changeType":"created","clientState":"` + t.clientState + `","tenantId":"` + benchTenant + `",` +
		`"resource":"Users/` + user + `/Messages/` + msg + `","resourceData":{"@odata.type":"#Microsoft.Graph.Message",` +
		`"@odata.id":"Users/` + user + `/Messages/` + msg + `","@odata.etag":"W/\"CQAAABYAAAD\"","id":"` + msg + `"}}]}`
}

// benchTenant is the Entra tenant of the bench channels.
const benchTenant = "7f3c1c1e-0000-4000-8000-00000000be0c"

// mailNotifyCase posts notifications for mailFolders folders in turn; its
// setup subscribes them and first sends the burst to one of them.
func mailNotifyCase() *benchCase {
	var targets []mailTarget
	return &benchCase{
		Name: "mail-notify", Method: http.MethodPost, Needs: []string{"auth", "mailingest"},
		Vary: func(n uint64) (string, string) {
			return "/api/providerwebhook", notificationBody(targets[n%uint64(len(targets))], n)
		},
		Check: func(_ *http.Request, _, body []byte) error {
			// Acknowledged only once the import is queued (or already
			// queued in this bucket).
			if !bytes.Contains(body, []byte(`"queued":1`)) {
				return fmt.Errorf("not queued: %.200s", body)
			}
			return nil
		},
		Setup: func(ctx context.Context, e *benchEnv) (string, error) {
			var err error
			if targets, err = subscribeFolders(ctx, e, mailFolders); err != nil {
				return "", err
			}
			burst, err := notificationBurst(ctx, e, targets[0])
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("%d subscribed inboxes (handshake through the gateway); %s", len(targets), burst), nil
		},
		Note: fmt.Sprintf("one Graph notification per POST /api/providerwebhook (public, no per-IP limit), %d folders in turn; 200 only after the import is queued in JetStream", mailFolders),
	}
}

// subscribeFolders creates n e-mail channels that retrieve mail, waits for
// their inbox subscriptions and reads each one's clientState from the fake.
func subscribeFolders(ctx context.Context, e *benchEnv, n int) ([]mailTarget, error) {
	if e.Graph == nil {
		return nil, errors.New("no fake Graph")
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	// The channels' tenant must be connected to the bench customer first.
	tenant, err := stack.ConnectMicrosoft365(ctx, e.API.HTTP, e.API.BaseURL, e.API.Authorize, e.Graph.Server)
	if err != nil {
		return nil, err
	}
	var out []mailTarget
	for i := range n {
		mailbox := fmt.Sprintf("bench-%d-%s@contoso.test", i, randid.Hex(3))
		body, _ := json.Marshal(map[string]any{"name": fmt.Sprintf("Bench mailbox %d", i), "kind": "email",
			"emailAddress": mailbox, "provider": "microsoft365",
			"providerTenantID": tenant, "autoRetrieveEmails": true})
		data, err := e.API.Do(ctx, http.MethodPost, "/api/Channels", string(body), http.StatusCreated)
		if err != nil {
			return nil, err
		}
		var ch struct{ ChannelID int64 }
		if err := json.Unmarshal(data, &ch); err != nil {
			return nil, err
		}
		data, err = e.API.Do(ctx, http.MethodGet, fmt.Sprintf("/api/Channels/%d/folders", ch.ChannelID), "", http.StatusOK)
		if err != nil {
			return nil, err
		}
		var page struct {
			Items []struct {
				ProviderSubscriptionID *string `json:"providerSubscriptionId"`
			}
		}
		if err := json.Unmarshal(data, &page); err != nil || len(page.Items) != 1 || page.Items[0].ProviderSubscriptionID == nil {
			return nil, fmt.Errorf("channel %d: inbox not subscribed: %.300s", ch.ChannelID, data)
		}
		out = append(out, mailTarget{subscriptionID: *page.Items[0].ProviderSubscriptionID, mailbox: mailbox, channelID: ch.ChannelID})
	}
	states := map[string]string{}
	for _, s := range e.Graph.Subscriptions() {
		states[s.ID] = s.ClientState
	}
	for i, t := range out {
		if states[t.subscriptionID] == "" {
			return nil, fmt.Errorf("the fake Graph has no subscription %s", t.subscriptionID)
		}
		out[i].clientState = states[t.subscriptionID]
	}
	return out, nil
}

// notificationBurst sends burstNotifications notifications for one folder
// with setupWorkers*2 connections and counts the imports mailingest queued
// for them (its mail_import_publishes_total).
func notificationBurst(ctx context.Context, e *benchEnv, t mailTarget) (string, error) {
	before, err := counter(ctx, e.MetricsURL["mailingest"], "mail_import_publishes_total")
	if err != nil {
		return "", err
	}
	var next atomic.Uint64
	var failed atomic.Int64
	var firstErr atomic.Value
	start := time.Now()
	var wg sync.WaitGroup
	for range setupWorkers * 2 {
		wg.Go(func() {
			for {
				n := next.Add(1)
				if n > burstNotifications || ctx.Err() != nil {
					return
				}
				req, _ := e.API.NewRequest(ctx, http.MethodPost, "/api/providerwebhook", notificationBody(t, n))
				resp, err := e.API.HTTP.Do(req)
				if err == nil {
					_, _ = bufio.NewReader(resp.Body).WriteTo(devNull{})
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("status %s", resp.Status)
					}
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	after, err := counter(ctx, e.MetricsURL["mailingest"], "mail_import_publishes_total")
	if err != nil {
		return "", err
	}
	if failed.Load() > 0 {
		return "", fmt.Errorf("burst: %d of %d notifications failed, first: %v", failed.Load(), burstNotifications, firstErr.Load())
	}
	return fmt.Sprintf("burst: %d notifications for one folder acknowledged in %s (%.0f/s): %.0f imports queued (one per %s bucket; target <= %d)",
		burstNotifications, took.Round(time.Millisecond), burstNotifications/took.Seconds(), after-before,
		contracts.MailImportBucket, int(took/contracts.MailImportBucket)+2), nil
}

type devNull struct{}

func (devNull) Write(p []byte) (int, error) { return len(p), nil }

// counter reads an unlabelled counter from a Prometheus text endpoint.
func counter(ctx context.Context, url, name string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, fmt.Errorf("%s has no %s", url, name)
}
