package keys

import (
	"os"
	"path/filepath"
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
