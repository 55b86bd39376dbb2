package auth

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"
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

// TestHashMemoryReleasedOncePerPause: a burst of hashes gives its memory back once, after the
// burst; the next hash arms the release again.
func TestHashMemoryReleasedOncePerPause(t *testing.T) {
	var freed atomic.Int32
	saved := hashRelease
	hashRelease = &releaser{delay: 2 * time.Second, free: func() { freed.Add(1) }}
	t.Cleanup(func() { hashRelease = saved })
	waitFreed := func(want int32) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for freed.Load() < want {
			if time.Now().After(deadline) {
				t.Fatalf("memory released %d times, want %d", freed.Load(), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	h, err := HashPassword("correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := CheckPassword(h, "correct horse battery"); err != nil || !ok {
		t.Fatalf("CheckPassword = %v, %v", ok, err)
	}
	if n := freed.Load(); n != 0 {
		t.Fatalf("released %d times during the burst, want 0", n)
	}
	waitFreed(1)
	time.Sleep(500 * time.Millisecond)
	if n := freed.Load(); n != 1 {
		t.Fatalf("released %d times after one burst, want 1", n)
	}
	if _, err := CheckPassword(h, "wrong"); err != nil {
		t.Fatal(err)
	}
	waitFreed(2)
}
