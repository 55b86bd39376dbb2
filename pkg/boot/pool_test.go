package boot

import (
	"context"
	"io"
	"testing"
	"testing/fstest"

	"supportplatform.dev/pkg/config"
	"supportplatform.dev/pkg/natstest"
	"supportplatform.dev/pkg/postgres/pgtest"
)

// The pool's size is the service's default unless DATABASE_MAX_CONNS sets
// it; a size out of range stops the binary at start.
func TestPoolSize(t *testing.T) {
	open := opener(t)
	for _, c := range []struct {
		name    string
		env     string
		service int
		want    int32
	}{
		{"pgx's default", "", 0, 4},
		{"the service's default", "", 8, 8},
		{"the setting over the service's default", "3", 8, 3},
	} {
		d, err := open(map[string]string{"DATABASE_MAX_CONNS": c.env}, Options{Service: "pooltest", MaxConns: c.service})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := d.DB.Config().MaxConns; got < c.want || (c.want != 4 && got != c.want) {
			t.Errorf("%s: pool of %d, want %d", c.name, got, c.want)
		}
	}
	for _, bad := range []string{"-1", "5000"} {
		if _, err := open(map[string]string{"DATABASE_MAX_CONNS": bad}, Options{Service: "pooltest"}); err == nil {
			t.Errorf("DATABASE_MAX_CONNS=%s was accepted", bad)
		}
	}
}

// opener returns a function that opens Deps with env on a new database and
// NATS server, with o's Service and the schema "boottest"; they close when
// the test ends.
func opener(t *testing.T) func(env map[string]string, o Options) (*Deps, error) {
	dbURL, natsURL := pgtest.NewDatabase(t), natstest.Start(t)
	migrations := fstest.MapFS{"001_init.sql": {Data: []byte("CREATE TABLE t (id int);")}}
	return func(env map[string]string, o Options) (*Deps, error) {
		t.Helper()
		env["DATABASE_URL"], env["NATS_URL"] = dbURL, natsURL
		var cfg config.Common
		if err := config.Load(func(k string) string { return env[k] }, &cfg); err != nil {
			t.Fatal(err)
		}
		o.Schema, o.Migrations = "boottest", migrations
		d, err := Open(context.Background(), cfg, o, io.Discard)
		if d != nil {
			t.Cleanup(func() { _ = d.Close() })
		}
		return d, err
	}
}
