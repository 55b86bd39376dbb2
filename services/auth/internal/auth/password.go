package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/argon2"
)

// Argon2id parameters: OWASP's recommended minimum (19 MiB, 2 passes, 1 lane)
// keeps a login around 30 ms on these 2-core machines.
const (
	argonMemoryKiB = 19 * 1024
	argonTime      = 2
	argonThreads   = 1
	argonKeyLen    = 32
	argonSaltLen   = 16
)

// HashPassword returns a PHC-formatted argon2id hash.
func HashPassword(password string) (string, error) {
	salt := make([]byte, argonSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemoryKiB, argonThreads, argonKeyLen)
	hashRelease.touch()
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemoryKiB, argonTime, argonThreads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key)), nil
}

// CheckPassword verifies password against a PHC argon2id hash in constant time.
func CheckPassword(hash, password string) (bool, error) {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, errors.New("auth: unsupported password hash")
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, errors.New("auth: unsupported argon2 version")
	}
	var mem, t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &mem, &t, &p); err != nil {
		return false, errors.New("auth: malformed argon2 parameters")
	}
	salt, err := base64.RawStdEncoding.DecodeString(parts[4])
	if err != nil {
		return false, errors.New("auth: malformed salt")
	}
	want, err := base64.RawStdEncoding.DecodeString(parts[5])
	if err != nil {
		return false, errors.New("auth: malformed hash")
	}
	got := argon2.IDKey([]byte(password), salt, t, mem, p, uint32(len(want)))
	hashRelease.touch()
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

// hashRelease gives the memory of the last password hashes back to the operating system once
// hashing has paused for a while. Every argon2id hash allocates its 19 MiB block; once garbage,
// the Go runtime would keep it (and a burst of concurrent logins' blocks) in the process's RSS
// and return it only slowly: auth idled at 40 to 70 MB after a login instead of about 30. One
// forced collection and release (debug.FreeOSMemory, a few milliseconds on this heap) per quiet
// period after hashing costs next to nothing beside the hashes' own 30 ms each.
var hashRelease = &releaser{delay: 2 * time.Second, free: debug.FreeOSMemory}

// releaser calls free once touch has not been called for delay.
type releaser struct {
	delay time.Duration
	free  func()

	mu    sync.Mutex
	timer *time.Timer
}

func (r *releaser) touch() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.timer == nil {
		r.timer = time.AfterFunc(r.delay, r.free)
		return
	}
	r.timer.Reset(r.delay)
}
