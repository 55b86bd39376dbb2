package main

import "testing"

func TestBackendRole(t *testing.T) {
	for _, c := range []struct {
		title, role string
		ok          bool
	}{
		{"postgres: 15/main: tickets sp_bench_1 127.0.0.1(5432) idle ", "tickets", true},
		{"postgres: importreply sp_bench_1 [local] SELECT ", "importreply", true},
		{"postgres: 15/main: tickets sp_bench_12 127.0.0.1(5432) idle ", "", false},
		{"postgres: 15/main: checkpointer ", "", false},
	} {
		role, ok := backendRole(c.title, "sp_bench_1")
		if role != c.role || ok != c.ok {
			t.Errorf("%q: %q %v, want %q %v", c.title, role, ok, c.role, c.ok)
		}
	}
}
