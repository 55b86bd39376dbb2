package mt

import "testing"

func TestPairString(t *testing.T) {
	for _, tt := range []struct {
		p    Pair
		want string
	}{
		{Pair{Source: "en", Target: "es"}, "en->es"},
		{Pair{Source: "en", Target: "es", SourceUncertain: true}, "en->es"},
		{Pair{Target: "xh"}, "auto->xh"},
	} {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.p, got, tt.want)
		}
	}
}
