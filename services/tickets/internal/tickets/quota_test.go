package tickets

import (
	"errors"
	"testing"
)

// QuotaFits gets the usage with the new bytes counted (the store reads it
// after the insert): the figures of its refusal are CheckQuota's before.
func TestQuotaFits(t *testing.T) {
	fits := QuotaFits(100)
	for _, tc := range []struct {
		name       string
		used, size int64
		refused    bool
	}{
		{"under", 60, 10, false},
		{"exactly full", 100, 40, false},
		{"one over", 101, 40, true},
		{"alone too large", 150, 150, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := fits(tc.used, tc.size)
			if errors.Is(err, ErrQuota) != tc.refused {
				t.Fatalf("fits(%d, %d) = %v", tc.used, tc.size, err)
			}
			if tc.refused && err.Error() != CheckQuota(tc.used-tc.size, 100, tc.size).Error() {
				t.Fatalf("figures %v", err)
			}
		})
	}
}
