package replier_test

import (
	"strings"
	"testing"
	"time"

	"supportplatform.dev/pkg/config"
	"supportplatform.dev/pkg/config/configtest"
	"supportplatform.dev/services/mail/internal/replier"
)

func TestConfig(t *testing.T) {
	configtest.RequireDocumented(t, "../../README.md", replier.Config{})

	var def replier.Config
	if err := config.Load(func(string) string { return "" }, &def); err != nil {
		t.Fatal(err)
	}
	if err := def.Check(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if got, _ := def.Schedule(); len(got) != len(replier.DefaultBackoff) || got[0] != time.Second || got[4] != 10*time.Minute {
		t.Fatalf("default schedule %v", got)
	}
	tests := []struct {
		name string
		env  map[string]string
		want string // "" when valid
	}{
		{name: "a bad delay", env: map[string]string{"REPLY_BACKOFF": "1s,soon"}, want: "REPLY_BACKOFF"},
		{name: "a negative delay", env: map[string]string{"REPLY_BACKOFF": "-1s"}, want: "REPLY_BACKOFF"},
		{name: "no concurrency", env: map[string]string{"REPLY_CONCURRENCY": "0"}, want: "REPLY_CONCURRENCY"},
		{name: "no time to send", env: map[string]string{"REPLY_SEND_TIMEOUT": "0s"}, want: "REPLY_SEND_TIMEOUT"},
		{name: "one delay", env: map[string]string{"REPLY_BACKOFF": "250ms"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c replier.Config
			if err := config.Load(func(k string) string { return tc.env[k] }, &c); err != nil {
				t.Fatal(err)
			}
			err := c.Check()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check() = %v, want an error naming %s", err, tc.want)
			}
		})
	}
}
