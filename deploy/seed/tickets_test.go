package seed

import "testing"

func TestSearchQueriesMatchSeededSubjects(t *testing.T) {
	seen := map[string]bool{}
	pairs := uint64(len(SubjectAdjectives) * len(SubjectNouns))
	for n := range pairs {
		q := SearchQuery(n)
		if seen[q] {
			t.Fatalf("query %q twice in %d", q, pairs)
		}
		seen[q] = true
	}
	if len(SubjectNouns) != 50 || len(SubjectAdjectives) != 20 {
		t.Fatalf("%d adjectives and %d nouns: make bench's note promises 100 tickets per pair", len(SubjectAdjectives), len(SubjectNouns))
	}
}
