package paging

import (
	"strconv"
	"testing"

	"supportplatform.dev/pkg/apperr"
)

// FuzzParseInt: exactly the canonical decimal spellings of 0..MaxInt64 are
// accepted, and each reads back as written.
func FuzzParseInt(f *testing.F) {
	for _, s := range []string{"0", "1", "42", "01", "00", "+5", "-1", "-0", " 10", "10 ", "1_000", "0x10", "1e3",
		"9223372036854775807", "9223372036854775808", "99999999999999999999", "１", "٣", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		n, ok := ParseInt(raw)
		m, err := strconv.ParseInt(raw, 10, 64)
		canonical := err == nil && m >= 0 && strconv.FormatInt(m, 10) == raw
		if ok != canonical {
			t.Fatalf("ParseInt(%q) = %d, %v; canonical: %v", raw, n, ok, canonical)
		}
		if ok && n != m {
			t.Fatalf("ParseInt(%q) = %d, want %d", raw, n, m)
		}
		if !ok && n != 0 {
			t.Fatalf("ParseInt(%q) refused with %d", raw, n)
		}
	})
}

// FuzzParse: a page request is either within bounds, with every value read
// as written, or a 400 naming exactly the bad parameters.
func FuzzParse(f *testing.F) {
	for _, s := range [][2]string{{"", ""}, {"1", "20"}, {"2", "100"}, {"1000000", "1"}, {"1000001", "101"},
		{"0", "0"}, {"+1", "010"}, {"-1", " 5"}, {"x", "1e2"}, {"9223372036854775807", "9223372036854775808"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, number, size string) {
		get := func(name string) string {
			switch name {
			case "pageNumber":
				return number
			case "pageSize":
				return size
			}
			return ""
		}
		p, err := Parse(get)
		badNumber := number != "" && !inRange(number, 1, 1_000_000)
		badSize := size != "" && !inRange(size, 1, MaxSize)
		if err != nil {
			ae, ok := err.(*apperr.Error)
			if !ok || ae.Code != apperr.Invalid {
				t.Fatalf("error %v is not an apperr.Invalid", err)
			}
			_, n := ae.Fields["pageNumber"]
			_, s := ae.Fields["pageSize"]
			if n != badNumber || s != badSize || len(ae.Fields) != btoi(n)+btoi(s) {
				t.Fatalf("(%q, %q): fields %v", number, size, ae.Fields)
			}
			return
		}
		if badNumber || badSize {
			t.Fatalf("(%q, %q) accepted as %+v", number, size, p)
		}
		if p.Number < 1 || p.Number > 1_000_000 || p.Size < 1 || p.Size > MaxSize || p.Offset() < 0 {
			t.Fatalf("(%q, %q): page %+v out of bounds", number, size, p)
		}
		if (number != "" && strconv.Itoa(p.Number) != number) || (number == "" && p.Number != 1) ||
			(size != "" && strconv.Itoa(p.Size) != size) || (size == "" && p.Size != DefaultSize) {
			t.Fatalf("(%q, %q) read as %+v", number, size, p)
		}
		for _, total := range []int{0, 1, p.Size, p.Size + 1, 1 << 40} {
			e := NewEnvelope[int](nil, total, p)
			if e.Items == nil || e.TotalPages*p.Size < total || (total > 0 && (e.TotalPages-1)*p.Size >= total) {
				t.Fatalf("envelope %+v for total %d, page %+v", e, total, p)
			}
		}
	})
}

func inRange(s string, lo, hi int64) bool {
	n, ok := ParseInt(s)
	return ok && n >= lo && n <= hi
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
