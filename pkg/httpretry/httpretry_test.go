package httpretry

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		{"absent", nil, 0, false},
		{"integer seconds", map[string]string{"Retry-After": "3"}, 3 * time.Second, true},
		{"zero", map[string]string{"Retry-After": "0"}, 0, true},
		{"fractional seconds", map[string]string{"Retry-After": "2.128"}, 2128 * time.Millisecond, true},
		{"http date", map[string]string{"Retry-After": "Sat, 01 Mar 2025 12:00:07 GMT"}, 7 * time.Second, true},
		{"http date in the past", map[string]string{"Retry-After": "Sat, 01 Mar 2025 11:00:00 GMT"}, 0, true},
		{"milliseconds header wins", map[string]string{"Retry-After": "9", "Retry-After-Ms": "250"}, 250 * time.Millisecond, true},
		{"negative", map[string]string{"Retry-After": "-1"}, 0, false},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			got, ok := RetryAfter(h, now)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("RetryAfter = %v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestTransient(t *testing.T) {
	for status, want := range map[int]bool{
		200: false, 400: false, 401: false, 404: false, 429: true,
		500: true, 501: false, 502: true, 503: true, 504: true, 505: false,
	} {
		if got := Transient(status); got != want {
			t.Errorf("Transient(%d) = %v, want %v", status, got, want)
		}
	}
}

func TestBackoffGrowsAndIsCapped(t *testing.T) {
	p := Policy{BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}
	for retry, full := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		full *= time.Millisecond
		for range 50 {
			d := p.Backoff(retry)
			if d < full/2 || d > full {
				t.Fatalf("Backoff(%d) = %v, want within [%v, %v]", retry, d, full/2, full)
			}
		}
	}
}

func TestRun(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name      string
		policy    Policy
		results   []error
		wantN     int
		wantErr   error
		wantSleep []time.Duration
	}{
		{"success first", Policy{MaxRetries: 3}, []error{nil}, 1, nil, nil},
		{"permanent failure not retried", Policy{MaxRetries: 3}, []error{boom}, 1, boom, nil},
		{"requested delay honoured", Policy{MaxRetries: 3},
			[]error{&Retry{Err: boom, After: 2 * time.Second, Requested: true}, nil}, 2, nil, []time.Duration{2 * time.Second}},
		{"requested zero delay", Policy{MaxRetries: 3},
			[]error{&Retry{Err: boom, Requested: true}, nil}, 2, nil, []time.Duration{0}},
		{"retries exhausted", Policy{MaxRetries: 2},
			[]error{&Retry{Err: boom, Requested: true, After: time.Millisecond}, &Retry{Err: boom, Requested: true, After: time.Millisecond}, &Retry{Err: boom, Requested: true, After: time.Millisecond}},
			3, boom, []time.Duration{time.Millisecond, time.Millisecond}},
		{"delay above cap gives up", Policy{MaxRetries: 3, MaxWait: time.Second},
			[]error{&Retry{Err: boom, After: time.Minute, Requested: true}}, 1, boom, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var slept []time.Duration
			tt.policy.Sleep = func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }
			calls := 0
			n, err := tt.policy.Run(context.Background(), func(context.Context) error {
				e := tt.results[calls]
				calls++
				return e
			})
			if n != tt.wantN || calls != tt.wantN {
				t.Errorf("attempts = %d (calls %d), want %d", n, calls, tt.wantN)
			}
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
			var r *Retry
			if errors.As(err, &r) {
				t.Errorf("Run leaked the *Retry wrapper: %v", err)
			}
			if len(slept) != len(tt.wantSleep) {
				t.Fatalf("slept %v, want %v", slept, tt.wantSleep)
			}
			for i := range slept {
				if slept[i] != tt.wantSleep[i] {
					t.Errorf("sleep %d = %v, want %v", i, slept[i], tt.wantSleep[i])
				}
			}
		})
	}
}

func TestRunStopsBeforeSleepingPastDeadline(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	ctx, cancel := context.WithDeadline(context.Background(), now.Add(time.Second))
	defer cancel()
	p := Policy{
		MaxRetries: 5,
		Now:        func() time.Time { return now },
		Sleep:      func(context.Context, time.Duration) error { t.Fatal("slept past the deadline"); return nil },
	}
	n, err := p.Run(ctx, func(context.Context) error {
		return &Retry{Err: errors.New("busy"), After: 5 * time.Second, Requested: true}
	})
	if n != 1 || err == nil {
		t.Fatalf("Run = %d, %v; want 1 attempt and an error", n, err)
	}
}

func TestRunStartsNoRetryThatCannotGetMinAttempt(t *testing.T) {
	// A frozen clock at the real now: the context itself must not expire during the test.
	now := time.Now()
	tests := []struct {
		name      string
		left      time.Duration // before the deadline
		after     time.Duration // the server's Retry-After
		wantCalls int
	}{
		{"room for wait and attempt", 10 * time.Second, 2 * time.Second, 2},
		{"exactly enough", 3 * time.Second, 2 * time.Second, 2},
		{"wait fits but attempt would not", 2500 * time.Millisecond, 2 * time.Second, 1},
		{"no wait, too little left", 500 * time.Millisecond, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithDeadline(context.Background(), now.Add(tt.left))
			defer cancel()
			p := Policy{MaxRetries: 1, MinAttempt: time.Second, Now: func() time.Time { return now },
				Sleep: func(context.Context, time.Duration) error { return nil }}
			calls := 0
			n, _ := p.Run(ctx, func(context.Context) error {
				calls++
				return &Retry{Err: errors.New("busy"), After: tt.after, Requested: true}
			})
			if calls != tt.wantCalls || n != tt.wantCalls {
				t.Fatalf("%d attempts (Run says %d), want %d", calls, n, tt.wantCalls)
			}
		})
	}
}

func TestSleepHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep error = %v, want context.Canceled", err)
	}
	if time.Since(start) > time.Second {
		t.Fatal("Sleep ignored the cancelled context")
	}
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("Sleep = %v", err)
	}
}
