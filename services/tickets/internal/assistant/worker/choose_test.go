package worker

import (
	"slices"
	"testing"

	"supportplatform.dev/services/tickets/internal/assistant"
)

func TestChoose(t *testing.T) {
	known := map[int64]int{1: 0, 2: 1, 3: 2, 4: 3, 5: 4}
	th := assistant.TopicThreshold
	tests := []struct {
		name   string
		scores []assistant.TopicScore
		want   []int64
	}{
		{name: "none", scores: nil, want: nil},
		{name: "below the threshold", scores: []assistant.TopicScore{{TopicID: 1, Score: th - 0.001}}, want: nil},
		{name: "at the threshold", scores: []assistant.TopicScore{{TopicID: 1, Score: th}}, want: []int64{1}},
		{name: "best first, at most three, ties by id", scores: []assistant.TopicScore{
			{TopicID: 5, Score: 0.5}, {TopicID: 1, Score: 0.9}, {TopicID: 4, Score: 0.5}, {TopicID: 2, Score: 0.4}, {TopicID: 3, Score: 0.1},
		}, want: []int64{1, 4, 5}},
		{name: "unknown topics and repeats ignored", scores: []assistant.TopicScore{
			{TopicID: 99, Score: 1}, {TopicID: 2, Score: 0.8}, {TopicID: 2, Score: 0.7},
		}, want: []int64{2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Choose(tt.scores, known); !slices.Equal(got, tt.want) {
				t.Fatalf("Choose = %v, want %v", got, tt.want)
			}
		})
	}
}
