package postgres_test

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5/pgxpool"

	"supportplatform.dev/pkg/paging"
	pgpkg "supportplatform.dev/pkg/postgres"
	"supportplatform.dev/pkg/postgres/pgtest"
	"supportplatform.dev/services/topics/internal/postgres"
	"supportplatform.dev/services/topics/internal/topics"
)

// topicCounts compares the counters (topic_counts) with a real count of the
// live topics, per customer.
func topicCounts(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	var diff int
	err := pool.QueryRow(context.Background(), `SELECT count(*) FROM (
		(SELECT customer_id, sum(n) FROM topic_counts GROUP BY 1 HAVING sum(n) <> 0
		 EXCEPT ALL SELECT customer_id, count(*) FROM topics WHERE deleted_at IS NULL GROUP BY 1)
		UNION ALL
		(SELECT customer_id, count(*) FROM topics WHERE deleted_at IS NULL GROUP BY 1
		 EXCEPT ALL SELECT customer_id, sum(n) FROM topic_counts GROUP BY 1 HAVING sum(n) <> 0)) x`).Scan(&diff)
	if err != nil {
		t.Fatal(err)
	}
	if diff != 0 {
		t.Fatalf("topic_counts differ from the live topics (%d rows)", diff)
	}
}

func listTotal(t *testing.T, s *postgres.Store, customerID int64) int {
	t.Helper()
	_, total, err := s.ListTopics(context.Background(), customerID, topics.TopicFilter{}, paging.Page{Number: 1, Size: 5})
	if err != nil {
		t.Fatal(err)
	}
	return total
}

// TestTopicCountsFollowEveryChange: the list's total (the counters) equals
// the live topics after concurrent creates and deletes on several
// connections (several counter slots), renames, a deleted topic, and
// writes by hand, and another customer's topics never count.
func TestTopicCountsFollowEveryChange(t *testing.T) {
	s, pool := newStoreAndPool(t)
	ctx := context.Background()
	if got := listTotal(t, s, tenantA); got != 0 {
		t.Fatalf("empty customer: total %d", got)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	ids := make(chan int64, 40)
	for w := range 8 {
		wg.Go(func() {
			for i := range 5 {
				tp, err := s.CreateTopic(ctx, tenantA, topics.TopicInput{Name: fmt.Sprintf("topic %d-%d", w, i)})
				if err != nil {
					errs <- err
					return
				}
				ids <- tp.ID
			}
		})
	}
	wg.Wait()
	close(errs)
	close(ids)
	for err := range errs {
		t.Fatal(err)
	}
	mustTopic(t, s, tenantB, "other customer's")
	if got := listTotal(t, s, tenantA); got != 40 {
		t.Fatalf("after 40 creates: total %d", got)
	}
	n := 0
	for id := range ids {
		if n++; n > 15 {
			break
		}
		wg.Go(func() {
			if _, err := s.DeleteTopic(ctx, tenantA, id); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if _, err := s.UpdateTopic(ctx, tenantA, <-ids, topics.TopicInput{Name: "renamed"}); err != nil {
		t.Fatal(err)
	}
	if got := listTotal(t, s, tenantA); got != 25 {
		t.Fatalf("after 15 deletes and a rename: total %d", got)
	}
	// By hand, in one statement each: several customers at once, a
	// deleted topic restored, a hard delete.
	for _, sql := range []string{
		`INSERT INTO topics (customer_id, name) VALUES (1, 'by hand 1'), (2, 'by hand 2'), (3, 'by hand 3'), (1, 'by hand 4')`,
		`UPDATE topics SET deleted_at = NULL WHERE topic_id = (SELECT min(topic_id) FROM topics WHERE deleted_at IS NOT NULL)`,
		`DELETE FROM topics WHERE name IN ('by hand 3', 'by hand 4')`,
		`UPDATE topics SET description = 'all of them'`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if a, b, c := listTotal(t, s, tenantA), listTotal(t, s, tenantB), listTotal(t, s, 3); a != 27 || b != 2 || c != 0 {
		t.Fatalf("after the writes by hand: totals %d, %d, %d; want 27, 2, 0", a, b, c)
	}
	topicCounts(t, pool)
}

// TestTopicCountsMigrationCountsTheTopicsBefore: the topics written before
// the counters existed are counted by the migration that adds them.
func TestTopicCountsMigrationCountsTheTopicsBefore(t *testing.T) {
	ctx := context.Background()
	all := postgres.Migrations()
	before := fstest.MapFS{}
	entries, err := fs.ReadDir(all, ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "005_") {
			break
		}
		data, err := fs.ReadFile(all, e.Name())
		if err != nil {
			t.Fatal(err)
		}
		before[e.Name()] = &fstest.MapFile{Data: data}
	}
	url := pgtest.NewDatabase(t)
	open := func(m fs.FS) *pgxpool.Pool {
		pool, err := pgpkg.Open(ctx, pgpkg.Options{URL: url, Schema: postgres.Schema, Migrations: m}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		return pool
	}
	old := open(before)
	if _, err := old.Exec(ctx, `INSERT INTO topics (customer_id, name, deleted_at)
		SELECT 1 + g % 3, 'topic ' || g, CASE WHEN g % 4 = 0 THEN now() END FROM generate_series(1, 30) g`); err != nil {
		t.Fatal(err)
	}
	old.Close()
	pool := open(all)
	s := postgres.New(pool, nil)
	if a, b := listTotal(t, s, 1), listTotal(t, s, 2); a != 8 || b != 7 {
		t.Fatalf("totals %d, %d; want 8, 7", a, b)
	}
	topicCounts(t, pool)
}
