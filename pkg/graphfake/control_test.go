package graphfake

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

func TestControlAPI(t *testing.T) {
	e := newEnv(t)
	tok := e.token(tenantA)
	sub := e.create(tok, e.newSub("a@b.example", "inbox"))

	post := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Post(e.srv.URL+path, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	tests := []struct {
		name       string
		path       string
		wantStatus int
		check      func(t *testing.T)
	}{
		{name: "notify", path: "/_fake/notify/" + sub.ID + "?n=2", wantStatus: http.StatusOK, check: func(t *testing.T) {
			got := e.recv.gotNotifications()
			if len(got) != 1 || len(got[0].Value) != 2 {
				t.Errorf("receiver got %+v", got)
			}
		}},
		{name: "notify an unknown subscription", path: "/_fake/notify/nope", wantStatus: http.StatusNotFound},
		{name: "notify zero", path: "/_fake/notify/" + sub.ID + "?n=0", wantStatus: http.StatusBadRequest},
		{name: "lifecycle", path: "/_fake/lifecycle/" + sub.ID + "?event=reauthorizationRequired", wantStatus: http.StatusOK},
		{name: "lifecycle of an unknown kind", path: "/_fake/lifecycle/" + sub.ID + "?event=bored", wantStatus: http.StatusBadRequest},
		{name: "throttle", path: "/_fake/throttle?n=1&retryAfter=3", wantStatus: http.StatusNoContent, check: func(t *testing.T) {
			if r := e.call(http.MethodGet, "/subscriptions", tok, nil); r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") != "3" {
				t.Errorf("after throttle: %d %q", r.status, r.header.Get("Retry-After"))
			}
		}},
		{name: "fail", path: "/_fake/fail?status=502", wantStatus: http.StatusNoContent, check: func(t *testing.T) {
			if r := e.call(http.MethodGet, "/subscriptions", tok, nil); r.status != http.StatusBadGateway {
				t.Errorf("after fail: %d", r.status)
			}
		}},
		{name: "fail with a success status", path: "/_fake/fail?status=200", wantStatus: http.StatusBadRequest},
		{name: "handshake mode", path: "/_fake/handshake?mode=fail", wantStatus: http.StatusNoContent, check: func(t *testing.T) {
			if r := e.call(http.MethodPost, "/subscriptions", tok, e.newSub("a@b.example", "other")); r.errorCode() != "ValidationError" {
				t.Errorf("create after mode=fail: %d %s", r.status, r.body)
			}
		}},
		{name: "unknown handshake mode", path: "/_fake/handshake?mode=maybe", wantStatus: http.StatusBadRequest},
		{name: "expire", path: "/_fake/expire/" + sub.ID, wantStatus: http.StatusNoContent, check: func(t *testing.T) {
			if len(e.fake.Subscriptions()) != 0 {
				t.Error("still there")
			}
		}},
		{name: "expire again", path: "/_fake/expire/" + sub.ID, wantStatus: http.StatusNotFound},
	}
	for _, tt := range tests { // in order: later cases depend on earlier ones
		t.Run(tt.name, func(t *testing.T) {
			status, body := post(tt.path)
			if status != tt.wantStatus {
				t.Fatalf("%s: %d %s, want %d", tt.path, status, body, tt.wantStatus)
			}
			if tt.check != nil {
				tt.check(t)
			}
		})
	}
}

func TestControlAPIListsSubscriptionsAndCalls(t *testing.T) {
	e := newEnv(t)
	sub := e.create(e.token(tenantA), e.newSub("a@b.example", "inbox"))

	resp, err := http.Get(e.srv.URL + "/_fake/subscriptions")
	if err != nil {
		t.Fatal(err)
	}
	var subs []Subscription
	err = json.NewDecoder(resp.Body).Decode(&subs)
	resp.Body.Close()
	if err != nil || len(subs) != 1 || subs[0].ID != sub.ID || subs[0].TenantID != tenantA {
		t.Errorf("subscriptions %+v, %v", subs, err)
	}

	resp, err = http.Get(e.srv.URL + "/_fake/calls")
	if err != nil {
		t.Fatal(err)
	}
	var calls struct {
		Calls         map[string]int `json:"calls"`
		TokenRequests map[string]int `json:"tokenRequests"`
	}
	err = json.NewDecoder(resp.Body).Decode(&calls)
	resp.Body.Close()
	if err != nil || calls.Calls["POST"] != 1 || calls.TokenRequests[tenantA] != 1 {
		t.Errorf("calls %+v, %v", calls, err)
	}
}
