package mail_test

import (
	"context"
	"errors"
	"testing"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/services/mail/internal/mail"
)

func TestToggles(t *testing.T) {
	type setup struct {
		channel mail.Channel
		folders []mail.Folder
	}
	cases := []struct {
		name    string
		prepare func(t *testing.T, e *env) setup
		// customer is who calls (default customerA).
		customer    int64
		unsubscribe bool
		// fail makes the provider fail these calls first.
		fail         map[string][]error
		wantNotFound bool
		wantOn       bool
		wantOutcomes []string
		check        func(t *testing.T, e *env, s setup, r mail.ToggleResult)
	}{
		{
			name: "subscribe a microsoft365 channel creates every folder's subscription",
			prepare: func(t *testing.T, e *env) setup {
				c, fs := e.channel(t, customerA, m365(false), "inbox", "archive")
				return setup{c, fs}
			},
			wantOn: true, wantOutcomes: []string{mail.OutcomeSubscribed, mail.OutcomeSubscribed},
			check: func(t *testing.T, e *env, s setup, r mail.ToggleResult) {
				for i, f := range s.folders {
					if row := e.row(t, f.ID); row.SubscriptionID != r.Folders[i].SubscriptionID || row.SubscriptionID == "" || !r.Folders[i].AutoRetrieveEmails {
						t.Errorf("folder %d: row %+v, outcome %+v", i, row, r.Folders[i])
					}
					if e.imports.catchUps(f.ID) != 1 {
						t.Errorf("folder %d: no catch-up import", i)
					}
				}
			},
		},
		{
			name: "subscribe again keeps the subscriptions",
			prepare: func(t *testing.T, e *env) setup {
				c, fs := e.channel(t, customerA, m365(false), "inbox")
				if _, err := e.svc.Subscribe(context.Background(), customerA, c.ID); err != nil {
					t.Fatal(err)
				}
				return setup{c, fs}
			},
			wantOn: true, wantOutcomes: []string{mail.OutcomeActive},
			check: func(t *testing.T, e *env, s setup, r mail.ToggleResult) {
				if n := e.prov.count("create", ""); n != 1 {
					t.Errorf("%d creates", n)
				}
			},
		},
		{
			name: "a provider none channel is switched and skipped",
			prepare: func(t *testing.T, e *env) setup {
				in := m365(false)
				in.Provider, in.ProviderTenantID = mail.ProviderNone, ""
				c, fs := e.channel(t, customerA, in, "inbox")
				return setup{c, fs}
			},
			wantOn: true, wantOutcomes: []string{mail.OutcomeSkipped},
			check: func(t *testing.T, e *env, s setup, r mail.ToggleResult) {
				if len(e.prov.calls) != 0 {
					t.Errorf("provider called: %+v", e.prov.calls)
				}
			},
		},
		{
			name: "a provider failure is a failed folder in a committed switch",
			prepare: func(t *testing.T, e *env) setup {
				c, fs := e.channel(t, customerA, m365(false), "inbox")
				return setup{c, fs}
			},
			fail:   map[string][]error{"create": {errors.New("graph: 500 internal server error")}},
			wantOn: true, wantOutcomes: []string{mail.OutcomeFailed},
			check: func(t *testing.T, e *env, s setup, r mail.ToggleResult) {
				if row := e.row(t, s.folders[0].ID); row.RenewRequested == nil || r.Folders[0].Error == "" {
					t.Errorf("row %+v, outcome %+v: not left for the renewal job", row, r.Folders[0])
				}
			},
		},
		{
			name: "unsubscribe deletes the subscriptions at the provider",
			prepare: func(t *testing.T, e *env) setup {
				c, fs := e.channel(t, customerA, m365(false), "inbox", "archive")
				if _, err := e.svc.Subscribe(context.Background(), customerA, c.ID); err != nil {
					t.Fatal(err)
				}
				return setup{c, fs}
			},
			unsubscribe: true, wantOn: false, wantOutcomes: []string{mail.OutcomeUnsubscribed, mail.OutcomeUnsubscribed},
			check: func(t *testing.T, e *env, s setup, r mail.ToggleResult) {
				if e.prov.live() != 0 || e.prov.count("delete", "") != 2 {
					t.Errorf("%d live, calls %+v", e.prov.live(), e.prov.calls)
				}
				for _, f := range s.folders {
					if row := e.row(t, f.ID); row.SubscriptionID != "" || row.ClientState != "" {
						t.Errorf("row %+v", row)
					}
				}
				if left, _ := e.store.RetiredSubscriptions(context.Background(), customerA); len(left) != 0 {
					t.Errorf("retired left: %+v", left)
				}
			},
		},
		{
			name: "unsubscribe whose delete fails leaves it retired for the renewal job",
			prepare: func(t *testing.T, e *env) setup {
				c, fs := e.channel(t, customerA, m365(false), "inbox")
				if _, err := e.svc.Subscribe(context.Background(), customerA, c.ID); err != nil {
					t.Fatal(err)
				}
				return setup{c, fs}
			},
			fail:        map[string][]error{"delete": {errors.New("graph: 502 bad gateway")}},
			unsubscribe: true, wantOn: false, wantOutcomes: []string{mail.OutcomeFailed},
			check: func(t *testing.T, e *env, s setup, r mail.ToggleResult) {
				left, err := e.store.RetiredSubscriptions(context.Background(), customerA)
				if err != nil || len(left) != 1 || left[0].Attempts != 1 || left[0].LastError != "graph: 502 bad gateway" {
					t.Errorf("retired %+v %v", left, err)
				}
				if row := e.row(t, s.folders[0].ID); row.SubscriptionID != "" {
					t.Errorf("the folder keeps %q", row.SubscriptionID)
				}
			},
		},
		{
			name: "unsubscribe of a channel without subscriptions",
			prepare: func(t *testing.T, e *env) setup {
				c, fs := e.channel(t, customerA, m365(false), "inbox")
				return setup{c, fs}
			},
			unsubscribe: true, wantOn: false, wantOutcomes: []string{mail.OutcomeNone},
		},
		{
			name: "another customer's channel is not found",
			prepare: func(t *testing.T, e *env) setup {
				c, fs := e.channel(t, customerB, m365(false), "inbox")
				return setup{c, fs}
			},
			wantNotFound: true,
		},
		{
			name:     "another customer's channel is not found for unsubscribe either",
			customer: customerB, unsubscribe: true,
			prepare: func(t *testing.T, e *env) setup {
				c, fs := e.channel(t, customerA, m365(true), "inbox")
				return setup{c, fs}
			},
			wantNotFound: true,
		},
		{
			name: "a deleted channel is not found",
			prepare: func(t *testing.T, e *env) setup {
				c, fs := e.channel(t, customerA, m365(false), "inbox")
				if _, err := e.store.DeleteChannel(context.Background(), customerA, c.ID); err != nil {
					t.Fatal(err)
				}
				return setup{c, fs}
			},
			wantNotFound: true,
		},
		{
			name: "a channel without an e-mail address is not found",
			prepare: func(t *testing.T, e *env) setup {
				c, _ := e.channel(t, customerA, mail.ChannelInput{Name: "web", Kind: mail.KindWeb, Provider: mail.ProviderNone})
				return setup{channel: c}
			},
			wantNotFound: true,
		},
		{
			name: "an unknown channel is not found",
			prepare: func(t *testing.T, e *env) setup {
				return setup{channel: mail.Channel{ID: 987654}}
			},
			unsubscribe: true, wantNotFound: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			s := tc.prepare(t, e)
			for op, errs := range tc.fail {
				e.prov.failNext(op, errs...)
			}
			customer := tc.customer
			if customer == 0 {
				customer = customerA
			}
			events := e.events(t)
			toggle := e.svc.Subscribe
			if tc.unsubscribe {
				toggle = e.svc.Unsubscribe
			}
			r, err := toggle(context.Background(), customer, s.channel.ID)
			if tc.wantNotFound {
				if ae, ok := err.(*apperr.Error); !ok || ae.Code != apperr.NotFound || ae.Message != "channel not found" {
					t.Fatalf("error %v, want not found", err)
				}
				if e.events(t) != events {
					t.Fatal("an event was written for a refused toggle")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Channel.ID != s.channel.ID || r.Channel.AutoRetrieveEmails != tc.wantOn || len(r.Folders) != len(tc.wantOutcomes) {
				t.Fatalf("result %+v", r)
			}
			for i, o := range r.Folders {
				if o.Outcome != tc.wantOutcomes[i] || o.AutoRetrieveEmails != tc.wantOn {
					t.Errorf("folder %d: %+v, want %s", i, o, tc.wantOutcomes[i])
				}
			}
			c, err := e.store.Channel(context.Background(), customerA, s.channel.ID)
			if err != nil || c.AutoRetrieveEmails != tc.wantOn {
				t.Fatalf("stored channel %+v %v", c, err)
			}
			if got := e.events(t); got != events+1 {
				t.Fatalf("%d channel events written, want 1", got-events)
			}
			if tc.check != nil {
				tc.check(t, e, s, r)
			}
		})
	}
}

// events counts the channel.updated events in the outbox.
func (e *env) events(t *testing.T) int {
	t.Helper()
	var n int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox WHERE subject LIKE '%channel.updated%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
