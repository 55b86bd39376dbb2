package postgres_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/pkg/postgres/pgtest"
)

// TestPage checks the totals and items of Page, whose count and page go to
// the server as one statement when the page query allows it, against the
// two statements run apart.
func TestPage(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	pool, err := postgres.Open(ctx, postgres.Options{URL: url, Schema: "svc", Migrations: os.DirFS("testdata/m1")}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	// 45 things; n is the id's remainder by 3, so "n = 0" keeps 15 of them.
	if _, err := pool.Exec(ctx, `INSERT INTO things (name, n) SELECT 'thing ' || lpad(g::text, 2, '0'), g % 3 FROM generate_series(1, 45) g`); err != nil {
		t.Fatal(err)
	}
	scan := func(row pgx.Row) (string, error) {
		var name string
		err := row.Scan(&name)
		return name, err
	}
	names := func(from, to int, step int) []string {
		var out []string
		for i := from; i <= to; i += step {
			out = append(out, fmt.Sprintf("thing %02d", i))
		}
		return out
	}
	const where = `WHERE ($1::int IS NULL OR n = $1)`
	count := `SELECT count(*) FROM things ` + where
	for _, tc := range []struct {
		name      string
		pageSQL   string
		n         any
		page      paging.Page
		wantTotal int
		want      []string
		// statements is how many statements Page sends.
		statements int
	}{
		{"first page", `SELECT name FROM things ` + where + ` ORDER BY id LIMIT $2 OFFSET $3`, nil, paging.Page{Number: 1, Size: 20}, 45, names(1, 20, 1), 1},
		{"last page, partial", `SELECT name FROM things ` + where + ` ORDER BY id LIMIT $2 OFFSET $3`, nil, paging.Page{Number: 3, Size: 20}, 45, names(41, 45, 1), 1},
		{"beyond the last page", `SELECT name FROM things ` + where + ` ORDER BY id LIMIT $2 OFFSET $3`, nil, paging.Page{Number: 4, Size: 20}, 45, nil, 2},
		{"filtered, descending", `SELECT name FROM things ` + where + ` ORDER BY id DESC LIMIT $2 OFFSET $3`, 0, paging.Page{Number: 2, Size: 10}, 15, []string{"thing 15", "thing 12", "thing 09", "thing 06", "thing 03"}, 1},
		{"nothing matches", `SELECT name FROM things ` + where + ` ORDER BY id LIMIT $2 OFFSET $3`, 7, paging.Page{Number: 1, Size: 20}, 0, nil, 1},
		{"nothing matches, page 2", `SELECT name FROM things ` + where + ` ORDER BY id LIMIT $2 OFFSET $3`, 7, paging.Page{Number: 2, Size: 20}, 0, nil, 2},
		{"not combinable (DISTINCT)", `SELECT DISTINCT name FROM things ` + where + ` ORDER BY name LIMIT $2 OFFSET $3`, 1, paging.Page{Number: 1, Size: 4}, 15, names(1, 10, 3), 2},
		{"not combinable, beyond the last", `SELECT DISTINCT name FROM things ` + where + ` ORDER BY name LIMIT $2 OFFSET $3`, 1, paging.Page{Number: 5, Size: 4}, 15, nil, 1},
		{"not combinable (a CTE)", `WITH t AS (SELECT * FROM things ` + where + `) SELECT name FROM t ORDER BY id LIMIT $2 OFFSET $3`, 2, paging.Page{Number: 2, Size: 5}, 15, names(17, 29, 3), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := &countingQuerier{Querier: pool}
			items, total, err := postgres.Page(ctx, q, "thing", count, tc.pageSQL, scan, tc.page, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			if q.statements != tc.statements {
				t.Errorf("%d statements, want %d", q.statements, tc.statements)
			}
			if total != tc.wantTotal || !slices.Equal(items, tc.want) {
				t.Errorf("total %d, items %v; want %d, %v", total, items, tc.wantTotal, tc.want)
			}
		})
	}
	t.Run("an error is the store's", func(t *testing.T) {
		_, _, err := postgres.Page(ctx, pool, "thing", `SELECT count(*) FROM nothing`, `SELECT name FROM things ORDER BY id LIMIT $1 OFFSET $2`, scan, paging.Page{Number: 1, Size: 5})
		if err == nil {
			t.Fatal("no error")
		}
	})
}

// countingQuerier counts the statements sent through it.
type countingQuerier struct {
	postgres.Querier
	statements int
}

func (q *countingQuerier) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	q.statements++
	return q.Querier.Query(ctx, sql, args...)
}

func (q *countingQuerier) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	q.statements++
	return q.Querier.QueryRow(ctx, sql, args...)
}
