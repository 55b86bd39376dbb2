// Package paging parses pageNumber/pageSize and builds the list envelope
// {items,totalCount,totalPages} used by every list endpoint.
package paging

import (
	"strconv"

	"supportplatform.dev/pkg/apperr"
)

const (
	DefaultSize = 20
	MaxSize     = 100
)

// Page is a validated page request.
type Page struct {
	Number int // 1-based
	Size   int
}

// Offset is the SQL OFFSET for the page.
func (p Page) Offset() int { return (p.Number - 1) * p.Size }

// Parse reads pageNumber and pageSize from a query getter. Absent (or empty)
// values take the defaults; present but invalid ones are a 400, never
// silently clamped, so a client learns about its mistake. The syntax is
// ParseInt's: " 10", "+5" and "010" are refused.
func Parse(get func(string) string) (Page, error) {
	p := Page{Number: 1, Size: DefaultSize}
	var v apperr.Validation
	if raw := get("pageNumber"); raw != "" {
		n, ok := ParseInt(raw)
		if !ok || n < 1 || n > 1_000_000 {
			v.Add("pageNumber", "must be an integer from 1 to 1000000")
		} else {
			p.Number = int(n)
		}
	}
	if raw := get("pageSize"); raw != "" {
		n, ok := ParseInt(raw)
		if !ok || n < 1 || n > MaxSize {
			v.Add("pageSize", "must be an integer from 1 to 100")
		} else {
			p.Size = int(n)
		}
	}
	return p, v.Err()
}

// ParseInt is the one syntax of the integers a client writes in a query or
// a path (page numbers and sizes, ids): ASCII digits only, no sign, no
// spaces, no leading zero except in "0" itself, at most int64. strconv alone
// takes "+5", and an id "01" would name the same record as "1" under another
// URL.
func ParseInt(raw string) (int64, bool) {
	if raw == "" || len(raw) > 19 || (raw[0] == '0' && len(raw) > 1) {
		return 0, false
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] < '0' || raw[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// Envelope is the JSON shape of a page of results.
type Envelope[T any] struct {
	Items      []T `json:"items"`
	TotalCount int `json:"totalCount"`
	TotalPages int `json:"totalPages"`
}

// NewEnvelope builds the envelope; items is never null in JSON.
func NewEnvelope[T any](items []T, total int, p Page) Envelope[T] {
	if items == nil {
		items = []T{}
	}
	pages := 0
	if total > 0 {
		pages = (total + p.Size - 1) / p.Size
	}
	return Envelope[T]{Items: items, TotalCount: total, TotalPages: pages}
}

// Map converts an envelope's items, e.g. from domain to response types.
func Map[T, U any](items []T, f func(T) U) []U {
	out := make([]U, 0, len(items))
	for _, it := range items {
		out = append(out, f(it))
	}
	return out
}
