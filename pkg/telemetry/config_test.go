package telemetry_test

import (
	"context"
	"testing"

	"supportplatform.dev/pkg/config"
	"supportplatform.dev/pkg/telemetry"
)

// An empty environment (every binary's default) exports nothing; the
// standard variables reach the set-up through the binary's config.
func TestFromEnvironment(t *testing.T) {
	var off config.Common
	if err := config.Load(func(string) string { return "" }, &off); err != nil {
		t.Fatal(err)
	}
	tr, err := telemetry.Setup(context.Background(), off.Telemetry, "auth")
	if err != nil {
		t.Fatal(err)
	}
	if tr.Enabled() {
		t.Fatal("tracing is on in an empty environment")
	}

	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
		"OTEL_TRACES_SAMPLER_ARG": "0.5", "OTEL_SERVICE_NAME": "auth-eu"}
	var on config.Common
	if err := config.Load(func(k string) string { return env[k] }, &on); err != nil {
		t.Fatal(err)
	}
	tr, err = telemetry.Setup(context.Background(), on.Telemetry, "auth")
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Shutdown(context.Background())
	if !tr.Enabled() || tr.Endpoint() != "http://127.0.0.1:1/v1/traces" {
		t.Fatalf("enabled %v endpoint %q", tr.Enabled(), tr.Endpoint())
	}

	env["OTEL_SDK_DISABLED"] = "yes"
	var bad config.Common
	if err := config.Load(func(k string) string { return env[k] }, &bad); err == nil {
		t.Fatal("OTEL_SDK_DISABLED=yes accepted")
	}
}
