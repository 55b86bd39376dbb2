package stack

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// DevTLS is the development TLS material: a self-signed CA and a leaf
// certificate for localhost, 127.0.0.1 and ::1 signed by it. Clients trust
// the CA (curl --cacert, CAPool in Go tests); Traefik serves the leaf.
type DevTLS struct {
	Dir      string
	CAFile   string // ca.pem
	CertFile string // cert.pem (leaf followed by the CA)
	KeyFile  string // key.pem
	CAPool   *x509.CertPool
}

// DevTLSHosts are the names the leaf certificate is valid for.
var DevTLSHosts = []string{"localhost", "127.0.0.1", "::1"}

// EnsureDevTLS loads the TLS material in dir, or generates it when it is
// missing, does not cover DevTLSHosts or expires within a week. Keeping a
// valid CA lets a developer trust it once for `make run`.
func EnsureDevTLS(dir string, now time.Time) (*DevTLS, error) {
	d := &DevTLS{
		Dir:      dir,
		CAFile:   filepath.Join(dir, "ca.pem"),
		CertFile: filepath.Join(dir, "cert.pem"),
		KeyFile:  filepath.Join(dir, "key.pem"),
	}
	if err := d.load(now); err == nil {
		return d, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := d.generate(now); err != nil {
		return nil, err
	}
	if err := d.load(now); err != nil {
		return nil, fmt.Errorf("generated TLS material does not verify: %w", err)
	}
	return d, nil
}

func (d *DevTLS) load(now time.Time) error {
	caPEM, err := os.ReadFile(d.CAFile)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return errors.New("no CA certificate in " + d.CAFile)
	}
	pair, err := tls.LoadX509KeyPair(d.CertFile, d.KeyFile)
	if err != nil {
		return err
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return err
	}
	if leaf.NotAfter.Before(now.Add(7 * 24 * time.Hour)) {
		return errors.New("leaf certificate expires within a week")
	}
	for _, h := range DevTLSHosts {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: h, Roots: pool, CurrentTime: now}); err != nil {
			return err
		}
	}
	d.CAPool = pool
	return nil
}

func (d *DevTLS) generate(now time.Time) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serialNumber(),
		Subject:               pkix.Name{Organization: []string{"supportplatform development"}, CommonName: "supportplatform development CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(2 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}

	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: serialNumber(),
		Subject:      pkix.Name{Organization: []string{"supportplatform development"}, CommonName: "localhost"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range DevTLSHosts {
		if ip := net.ParseIP(h); ip != nil {
			leafTmpl.IPAddresses = append(leafTmpl.IPAddresses, ip)
		} else {
			leafTmpl.DNSNames = append(leafTmpl.DNSNames, h)
		}
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &leafKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	leafKeyDER, err := x509.MarshalPKCS8PrivateKey(leafKey)
	if err != nil {
		return err
	}

	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	var chain bytes.Buffer
	_ = pem.Encode(&chain, &pem.Block{Type: "CERTIFICATE", Bytes: leafDER})
	chain.Write(caPEM)
	// The CA key is not written: nothing is ever signed with it again, so a
	// leaked development directory cannot mint certificates for other names.
	for _, f := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{
		{d.CAFile, caPEM, 0o644},
		{d.CertFile, chain.Bytes(), 0o644},
		{d.KeyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: leafKeyDER}), 0o600},
	} {
		if err := os.WriteFile(f.path, f.data, f.mode); err != nil {
			return err
		}
	}
	return nil
}

func serialNumber() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	return n
}
