// Package keys loads the Ed25519 token signing key, or in development
// generates one and persists it so tokens survive restarts.
package keys

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Load reads a PKCS#8 PEM Ed25519 private key from path. When the file does
// not exist and generate is true, a new key is written there (mode 0600).
func Load(path string, generate bool) (ed25519.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && generate {
		return create(path)
	}
	if err != nil {
		return nil, fmt.Errorf("keys: read %s: %w", path, err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("keys: %s holds no PKCS#8 PRIVATE KEY block", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("keys: parse %s: %w", path, err)
	}
	ed, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("keys: %s is not an Ed25519 key", path)
	}
	return ed, nil
}

// create generates a key and publishes it at path atomically: written in
// full to a temporary file first, then linked to path, which fails when
// another process got there first (auth replicas starting together), and
// then that one's key is used. A reader never sees a half-written file.
func create(path string) (ed25519.PrivateKey, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".signing-key-*")
	if err != nil {
		return nil, fmt.Errorf("keys: create %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := pem.Encode(f, &pem.Block{Type: "PRIVATE KEY", Bytes: der}); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("keys: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("keys: write %s: %w", path, err)
	}
	if err := os.Link(tmp, path); errors.Is(err, fs.ErrExist) {
		// Another process generated it first: use theirs.
		return Load(path, false)
	} else if err != nil {
		return nil, fmt.Errorf("keys: create %s: %w", path, err)
	}
	return priv, nil
}
