package streamticket_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/redistest"
	"supportplatform.dev/services/live/internal/streamticket"
)

// A ticket redeemed by many requests at once opens one stream: the others
// are refused as used.
func TestTicketWorksOnceUnderConcurrentRedeems(t *testing.T) {
	rdb, prefix := redistest.Open(t, "streamticket")
	s := streamticket.New(rdb, prefix, 30*time.Second, time.Now)
	p := authn.Principal{CustomerID: 7, AccountID: 3, Role: "agent", TokenID: "jti-1",
		IssuedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}
	ticket, _, err := s.Issue(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	var ok, refused atomic.Int32
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			got, err := s.Redeem(context.Background(), ticket)
			switch {
			case err == nil && got.CustomerID == 7 && got.TokenID == "jti-1":
				ok.Add(1)
			case apperr.Is(err, apperr.Unauthorized):
				refused.Add(1)
			default:
				t.Errorf("redeem: %+v, %v", got, err)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 1 || refused.Load() != 31 {
		t.Fatalf("%d redeemed, %d refused: want 1 and 31", ok.Load(), refused.Load())
	}
}
