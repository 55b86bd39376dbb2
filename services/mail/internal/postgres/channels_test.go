package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/services/mail/internal/mail"
)

// The folder limit and the one-folder-per-provider-id rule hold under
// parallel writes: the channel's row lock serialises them.
func TestFolderRulesUnderParallelWrites(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	ids := make([]string, mail.MaxFolders-3)
	for i := range ids {
		ids[i] = fmt.Sprintf("folder-%d", i)
	}
	c, _ := mustMailChannel(t, s, 1, "limits@contoso.com", false, ids...)

	run := func(n int, in func(i int) mail.FolderInput) (ok, conflicts int) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				_, err := s.CreateFolder(ctx, 1, c.ID, in(i))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					ok++
				case apperr.Is(err, apperr.Conflict):
					conflicts++
				default:
					t.Errorf("create folder: %v", err)
				}
			})
		}
		wg.Wait()
		return ok, conflicts
	}
	// Ten writers of one provider folder: one wins.
	if ok, conflicts := run(10, func(int) mail.FolderInput { return mail.FolderInput{ExternalFolderID: "same"} }); ok != 1 || conflicts != 9 {
		t.Fatalf("same folder: %d created, %d conflicts", ok, conflicts)
	}
	// Ten writers of distinct folders with two places left: two win.
	if ok, conflicts := run(10, func(i int) mail.FolderInput { return mail.FolderInput{ExternalFolderID: fmt.Sprintf("new-%d", i)} }); ok != 2 || conflicts != 8 {
		t.Fatalf("at the limit: %d created, %d conflicts", ok, conflicts)
	}
	all, err := s.AllFolders(ctx, 1, c.ID)
	if err != nil || len(all) != mail.MaxFolders {
		t.Fatalf("%d folders, %v", len(all), err)
	}
}
