package boot

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// HealthcheckTimeout bounds the whole `healthcheck` subcommand: connect,
// request and answer. Container runtimes run it every few seconds with a
// timeout of their own (docker-compose.yml: 3s); this one is shorter so
// that the binary reports why it failed instead of being killed.
const HealthcheckTimeout = 2 * time.Second

// Healthcheck is the `healthcheck` subcommand of every binary: it asks the
// running process of the same container for GET /readyz on the port of
// httpAddr (HTTP_ADDR, read the way the server reads it) and returns nil
// for a 200, an error (exit status 1) for anything else. The images are
// distroless, without a shell or wget, so the binary checks itself:
// docker-compose.yml runs `["CMD", "/usr/local/bin/<name>", "healthcheck"]`.
func Healthcheck(ctx context.Context, httpAddr string, stdout io.Writer) error {
	target, err := healthcheckURL(httpAddr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, HealthcheckTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	client := &http.Client{
		// No proxy from the environment: the target is this container.
		Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
		// /readyz answers itself; a redirect is not "ready".
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	// The body of /readyz names the failing dependency: keep a little of it
	// for `docker inspect`'s health log.
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: GET %s: %s: %s", target, resp.Status, strings.TrimSpace(string(body)))
	}
	fmt.Fprintf(stdout, "ready: %s\n", target)
	return nil
}

// healthcheckURL is the /readyz URL of the server listening on httpAddr,
// seen from inside its container: a wildcard or empty host is reached over
// the IPv4 loopback (Go listens dual-stack on "::" too).
func healthcheckURL(httpAddr string) (string, error) {
	host, port, err := net.SplitHostPort(httpAddr)
	if err != nil {
		return "", fmt.Errorf("healthcheck: HTTP_ADDR %q: %w", httpAddr, err)
	}
	if port == "" || port == "0" {
		return "", fmt.Errorf("healthcheck: HTTP_ADDR %q has no fixed port to check", httpAddr)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/readyz", nil
}
