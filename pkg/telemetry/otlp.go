package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// exporter is the OTLP span exporter of both protocols, written here
// rather than taken from the SDK (otlptracehttp, otlptracegrpc), which
// link protobuf's runtime and gRPC: see otlpenc.go for what that cost.
// It behaves as the SDK's: the same request body, headers, timeout,
// compression, TLS settings and retries.
//
//   - http/protobuf: a POST of the encoded request to the endpoint,
//     Content-Type application/x-protobuf.
//   - grpc: the TraceService/Export call over HTTP/2 (cleartext for an
//     http:// endpoint, TLS for https://), the request framed as gRPC
//     does (a flag byte and a 4-byte length) and the answer's grpc-status
//     read from the trailers.
//
// The SDK's exporters read OTEL_EXPORTER_OTLP_{TIMEOUT,COMPRESSION,
// CERTIFICATE,CLIENT_CERTIFICATE,CLIENT_KEY} (and their TRACES_ forms,
// which win) from the process environment themselves; so does this one.
type exporter struct {
	protocol string
	url      string // http: the full URL; grpc: the URL of the Export method
	headers  map[string]string
	timeout  time.Duration
	gzip     bool
	client   *http.Client
	retry    retryPolicy

	mu       sync.Mutex
	shutdown bool
}

const (
	userAgentHTTP = "OTel Go OTLP over HTTP/protobuf exporter"
	userAgentGRPC = "OTel Go OTLP over gRPC trace exporter"
	grpcMethod    = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
	// maxResponse bounds how much of a response body is read.
	maxResponse = 64 << 10
)

// retryPolicy is the SDK's default: 5 s after the first failure, growing
// 1.5 times up to 30 s between attempts, at most 1 minute in all; a
// server's Retry-After (HTTP) wins over the computed wait.
type retryPolicy struct {
	initial, maxInterval, maxElapsed time.Duration
}

var defaultRetry = retryPolicy{initial: 5 * time.Second, maxInterval: 30 * time.Second, maxElapsed: time.Minute}

func newExporter(protocol, endpoint string, headers map[string]string, getenv func(string) string) (*exporter, error) {
	env := func(name string) string {
		if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_" + name)); v != "" {
			return v
		}
		return strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + name))
	}
	e := &exporter{protocol: protocol, url: endpoint, headers: headers, timeout: 10 * time.Second, retry: defaultRetry}
	if v := env("TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms < 0 {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_TIMEOUT=%q: not a number of milliseconds", v)
		}
		e.timeout = time.Duration(ms) * time.Millisecond
	}
	e.gzip = env("COMPRESSION") == "gzip"

	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12}
	if path := env("CERTIFICATE"); path != "" {
		pem, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE: %s has no PEM certificate", path)
		}
		tlsConf.RootCAs = pool
	}
	if cert, key := env("CLIENT_CERTIFICATE"), env("CLIENT_KEY"); cert != "" && key != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE/KEY: %w", err)
		}
		tlsConf.Certificates = []tls.Certificate{pair}
	}

	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSClientConfig:     tlsConf,
		MaxIdleConnsPerHost: 2,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	if protocol == ProtocolGRPC {
		u, err := url.Parse(endpoint)
		if err != nil {
			return nil, err
		}
		// gRPC is HTTP/2 only: prior knowledge on a cleartext endpoint.
		var p http.Protocols
		if u.Scheme == "http" {
			p.SetUnencryptedHTTP2(true)
		} else {
			p.SetHTTP2(true)
		}
		tr.Protocols = &p
		tr.Proxy = nil
		u.Path = strings.TrimRight(u.Path, "/") + grpcMethod
		e.url = u.String()
	}
	e.client = &http.Client{Transport: tr}
	return e, nil
}

// ExportSpans sends spans in one request, retrying what the server says
// may be retried, until ctx ends or the retries are used up.
func (e *exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	down := e.shutdown
	e.mu.Unlock()
	if down {
		return errors.New("otlp exporter: shut down")
	}
	if len(spans) == 0 {
		return nil
	}
	body := encodeTraces(spans)
	if e.gzip {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		_, _ = w.Write(body)
		if err := w.Close(); err != nil {
			return err
		}
		body = b.Bytes()
	}
	if e.protocol == ProtocolGRPC {
		framed := make([]byte, 5, 5+len(body))
		if e.gzip {
			framed[0] = 1
		}
		binary.BigEndian.PutUint32(framed[1:], uint32(len(body)))
		body = append(framed, body...)
	}

	if e.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.timeout)
		defer cancel()
	}
	start := time.Now()
	wait := e.retry.initial
	for {
		retryAfter, err := e.send(ctx, body)
		if err == nil {
			return nil
		}
		var r retryable
		if !errors.As(err, &r) || e.retry.initial <= 0 {
			return err
		}
		d := wait
		if retryAfter > 0 {
			d = retryAfter
		}
		if time.Since(start)+d > e.retry.maxElapsed {
			return fmt.Errorf("otlp exporter: retries exhausted: %w", err)
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: %w", ctx.Err(), err)
		case <-t.C:
		}
		wait = min(time.Duration(float64(wait)*1.5), e.retry.maxInterval)
	}
}

// retryable marks an error the request may be sent again after.
type retryable struct{ error }

func (r retryable) Unwrap() error { return r.error }

func (e *exporter) send(ctx context.Context, body []byte) (retryAfter time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	for k, v := range e.headers {
		req.Header.Set(k, v)
	}
	if e.protocol == ProtocolGRPC {
		req.Header.Set("Content-Type", "application/grpc")
		req.Header.Set("TE", "trailers")
		req.Header.Set("User-Agent", userAgentGRPC)
		if e.gzip {
			req.Header.Set("Grpc-Encoding", "gzip")
		}
		if dl, ok := ctx.Deadline(); ok {
			req.Header.Set("Grpc-Timeout", strconv.FormatInt(max(time.Until(dl).Milliseconds(), 1), 10)+"m")
		}
	} else {
		req.Header.Set("Content-Type", "application/x-protobuf")
		req.Header.Set("User-Agent", userAgentHTTP)
		if e.gzip {
			req.Header.Set("Content-Encoding", "gzip")
		}
	}
	resp, err := e.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, err
		}
		return 0, retryable{err} // connection refused, reset: the collector may come back
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponse))
	if e.protocol == ProtocolGRPC {
		return 0, grpcResult(resp)
	}
	switch resp.StatusCode {
	case http.StatusOK, http.StatusAccepted, http.StatusNoContent:
		return 0, nil
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return parseRetryAfter(resp.Header.Get("Retry-After")),
			retryable{fmt.Errorf("otlp exporter: %s: %s", resp.Status, strings.TrimSpace(string(msg)))}
	}
	return 0, fmt.Errorf("otlp exporter: %s: %s", resp.Status, strings.TrimSpace(string(msg)))
}

// grpcResult reads a gRPC call's outcome: grpc-status in the trailers
// (or in the headers of a trailers-only answer).
func grpcResult(resp *http.Response) error {
	if resp.StatusCode != http.StatusOK {
		err := fmt.Errorf("otlp exporter: grpc: HTTP %s", resp.Status)
		switch resp.StatusCode {
		case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return retryable{err}
		}
		return err
	}
	status, message := resp.Trailer.Get("Grpc-Status"), resp.Trailer.Get("Grpc-Message")
	if status == "" {
		status, message = resp.Header.Get("Grpc-Status"), resp.Header.Get("Grpc-Message")
	}
	code, err := strconv.Atoi(status)
	if err != nil {
		return fmt.Errorf("otlp exporter: grpc: no grpc-status in the answer")
	}
	if code == 0 {
		return nil
	}
	if m, err := url.PathUnescape(message); err == nil {
		message = m
	}
	err = fmt.Errorf("otlp exporter: grpc: status %d: %s", code, message)
	// The SDK's retryable codes: Canceled, DeadlineExceeded, Aborted,
	// OutOfRange, Unavailable, DataLoss.
	switch code {
	case 1, 4, 10, 11, 14, 15:
		return retryable{err}
	}
	return err
}

// parseRetryAfter reads a Retry-After header in seconds (0: none).
func parseRetryAfter(v string) time.Duration {
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// Shutdown stops exporting; the spans still queued were flushed by the
// provider before it is called.
func (e *exporter) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	e.shutdown = true
	e.mu.Unlock()
	e.client.CloseIdleConnections()
	return ctx.Err()
}
