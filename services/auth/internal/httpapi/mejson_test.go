package httpapi

import (
	"encoding/json"
	"testing"
	"time"

	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/services/auth/internal/auth"
)

// The hand-written me JSON is byte for byte what encoding/json writes for
// the meResponse (c.JSON's answer before).
func TestMeJSON(t *testing.T) {
	at := time.Date(2026, 11, 27, 22, 33, 38, 287340000, time.FixedZone("CET", 3600))
	for i, r := range []struct {
		cu auth.Customer
		a  auth.Account
	}{
		{},
		{auth.Customer{ID: 1, Name: "Bench Company", CreatedAt: at},
			auth.Account{ID: 7, CustomerID: 1, Email: "admin@example.com", Name: "Administrator", Role: "admin", CreatedAt: at.UTC(), Available: true}},
		{auth.Customer{ID: -1 << 62, Name: "quotes \" back\\slash \n\t\r\b\f \x01 <b>&amp;</b> ünïcödé 日本 \u2028\u2029 bad \xff\xfe end",
			CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
			auth.Account{ID: 1 << 40, Email: "a<b>@c.d", Name: "Ärger \x7f", Role: "agent", CreatedAt: at.AddDate(-3000, 0, 0), Language: "de"}},
	} {
		want, err := json.Marshal(toMe(r.cu, r.a))
		if err != nil {
			t.Fatal(err)
		}
		if got := appendMe(nil, r.cu, r.a); string(got) != string(want) {
			t.Errorf("response %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// Any string encodes as encoding/json encodes it.
func FuzzMeJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", "<>&\"\\", "\x00\x1f\x7f", "\u2028\u2029", "\xff", "日本語"} {
		f.Add(s, int64(0))
	}
	f.Fuzz(func(t *testing.T, s string, sec int64) {
		want, _ := json.Marshal(s)
		if got := httpserver.AppendJSONString(nil, s); string(got) != string(want) {
			t.Fatalf("%q: got %s want %s", s, got, want)
		}
		cu, a := auth.Customer{Name: s, CreatedAt: time.Unix(sec%(1<<40), 0)}, auth.Account{Name: s, Language: s, CreatedAt: time.Unix(-sec%(1<<40), 0)}
		want, _ = json.Marshal(toMe(cu, a))
		if got := appendMe(nil, cu, a); string(got) != string(want) {
			t.Fatalf("%q: got %s want %s", s, got, want)
		}
	})
}
