// Package randid makes random identifiers: event ids, request ids and the
// unique names tests give their databases, prefixes and records.
package randid

import (
	"crypto/rand"
	"encoding/hex"
)

// Hex returns n random bytes as 2n lowercase hex digits.
func Hex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}
