package keys

import (
	"crypto/ed25519"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestGenerateThenLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "key.pem")
	if _, err := Load(path, false); err == nil {
		t.Fatal("missing key without generate must fail")
	}
	k1, err := Load(path, true)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v", st.Mode().Perm())
	}
	k2, err := Load(path, true)
	if err != nil || !k1.Equal(k2) {
		t.Fatal("a persisted key must be reused across restarts")
	}
	if err := os.WriteFile(path, []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path, true); err == nil {
		t.Fatal("junk key accepted")
	}
}

// Auth replicas starting together generate the missing key at once: every
// one gets the same, whole key (none reads a half-written file).
func TestConcurrentGenerate(t *testing.T) {
	for round := range 30 {
		path := filepath.Join(t.TempDir(), "key.pem")
		const n = 8
		keys := make([]ed25519.PrivateKey, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { keys[i], errs[i] = Load(path, true) })
		}
		wg.Wait()
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("round %d, process %d: %v", round, i, errs[i])
			}
			if !keys[i].Equal(keys[0]) {
				t.Fatalf("round %d: process %d got another key", round, i)
			}
		}
		if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
			t.Fatalf("round %d: %d files left beside the key", round, len(entries)-1)
		}
	}
}
