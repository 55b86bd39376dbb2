package paging

import (
	"testing"

	"supportplatform.dev/pkg/apperr"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name, number, size string
		want               Page
		bad                bool
	}{
		{"defaults", "", "", Page{1, 20}, false},
		{"explicit", "3", "50", Page{3, 50}, false},
		{"max size", "1", "100", Page{1, 100}, false},
		{"size zero", "1", "0", Page{}, true},
		{"size over max", "1", "101", Page{}, true},
		{"size negative", "", "-5", Page{}, true},
		{"number zero", "0", "", Page{}, true},
		{"not a number", "x", "", Page{}, true},
		{"float", "1.5", "", Page{}, true},
		{"leading space", "", " 10", Page{}, true},
		{"trailing space", "2 ", "", Page{}, true},
		{"plus sign", "+5", "", Page{}, true},
		{"leading zero", "", "010", Page{}, true},
		{"number too large", "1000001", "", Page{}, true},
		{"huge", "99999999999999999999", "", Page{}, true},
		{"max number", "1000000", "", Page{1000000, 20}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := map[string]string{"pageNumber": tc.number, "pageSize": tc.size}
			p, err := Parse(func(k string) string { return q[k] })
			if tc.bad {
				if !apperr.Is(err, apperr.Invalid) {
					t.Fatalf("want invalid, got %v", err)
				}
				return
			}
			if err != nil || p != tc.want {
				t.Fatalf("got %+v %v, want %+v", p, err, tc.want)
			}
		})
	}
}

func TestParseInt(t *testing.T) {
	cases := []struct {
		name, raw string
		want      int64
		ok        bool
	}{
		{"zero", "0", 0, true},
		{"one", "1", 1, true},
		{"ten", "10", 10, true},
		{"max int64", "9223372036854775807", 9223372036854775807, true},
		{"over int64", "9223372036854775808", 0, false},
		{"twenty digits", "10000000000000000000", 0, false},
		{"empty", "", 0, false},
		{"leading zero", "01", 0, false},
		{"zeros", "00", 0, false},
		{"plus", "+1", 0, false},
		{"minus", "-1", 0, false},
		{"leading space", " 1", 0, false},
		{"trailing space", "1 ", 0, false},
		{"tab", "1\t", 0, false},
		{"underscore", "1_000", 0, false},
		{"hex", "0x10", 0, false},
		{"exponent", "1e3", 0, false},
		{"arabic-indic digits", "١", 0, false},
		{"fullwidth digit", "１", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n, ok := ParseInt(tc.raw)
			if n != tc.want || ok != tc.ok {
				t.Fatalf("ParseInt(%q) = %d, %v; want %d, %v", tc.raw, n, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestEnvelope(t *testing.T) {
	p := Page{Number: 3, Size: 20}
	if p.Offset() != 40 {
		t.Fatalf("offset %d", p.Offset())
	}
	e := NewEnvelope[int](nil, 41, p)
	if e.Items == nil || e.TotalPages != 3 || e.TotalCount != 41 {
		t.Fatalf("%+v", e)
	}
	if e := NewEnvelope([]int{}, 0, p); e.TotalPages != 0 {
		t.Fatalf("empty: %+v", e)
	}
	if e := NewEnvelope([]int{1}, 40, p); e.TotalPages != 2 {
		t.Fatalf("exact: %+v", e)
	}
}
