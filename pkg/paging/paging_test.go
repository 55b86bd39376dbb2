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
