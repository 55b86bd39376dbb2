package stack

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"
)

func TestEnsureDevTLSServesLoopbackNames(t *testing.T) {
	now := time.Now()
	d, err := EnsureDevTLS(t.TempDir(), now)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(d.CertFile, d.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake below is expected
	srv.StartTLS()
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	client := d.Client()
	for _, host := range []string{"127.0.0.1", "localhost"} {
		resp, err := client.Get("https://" + net.JoinHostPort(host, port) + "/")
		if err != nil {
			t.Errorf("%s: %v", host, err)
			continue
		}
		resp.Body.Close()
	}

	// A client without the dev CA must refuse the certificate.
	_, err = http.Get(srv.URL)
	var unknown *tls.CertificateVerificationError
	if !errors.As(err, &unknown) {
		t.Errorf("client without the dev CA: err = %v, want a certificate verification error", err)
	}
}

func TestEnsureDevTLSReusesAndRenews(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	first, err := EnsureDevTLS(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	ca1, _ := os.ReadFile(first.CAFile)

	second, err := EnsureDevTLS(dir, now.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	ca2, _ := os.ReadFile(second.CAFile)
	if !bytes.Equal(ca1, ca2) {
		t.Error("valid material was regenerated; a trusted dev CA must be kept")
	}

	// Near the leaf's expiry the material is made anew.
	later, err := EnsureDevTLS(dir, now.Add(360*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	ca3, _ := os.ReadFile(later.CAFile)
	if bytes.Equal(ca1, ca3) {
		t.Error("material expiring within a week was kept")
	}
	if info, err := os.Stat(later.KeyFile); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("key file mode: %v %v", info.Mode(), err)
	}
}
