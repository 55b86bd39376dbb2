package auth

import (
	"strings"
	"testing"
)

func TestPasswordHashRoundTrip(t *testing.T) {
	h, err := HashPassword("correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("unexpected format %q", h)
	}
	h2, _ := HashPassword("correct horse battery")
	if h == h2 {
		t.Fatal("salts must differ")
	}
	for pw, want := range map[string]bool{"correct horse battery": true, "correct horse batterY": false, "": false} {
		ok, err := CheckPassword(h, pw)
		if err != nil || ok != want {
			t.Fatalf("%q: %v %v", pw, ok, err)
		}
	}
	for _, bad := range []string{"", "$2a$10$bcrypt", "$argon2id$v=19$m=x$a$b", "$argon2id$v=18$m=1,t=1,p=1$AAAA$AAAA"} {
		if _, err := CheckPassword(bad, "x"); err == nil {
			t.Fatalf("malformed hash %q accepted", bad)
		}
	}
}
