package tickets

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
)

// fakeLookups answers from maps; calls counts the topic lookups.
type fakeLookups struct {
	channels map[int64]contracts.ChannelReply
	names    map[int64]string
	actions  map[int64][]contracts.LinkedAction
	docs     []contracts.LinkedDocument
	err      error
	calls    int
}

func (f *fakeLookups) Channel(_ context.Context, _, id int64) (contracts.ChannelReply, error) {
	return f.channels[id], f.err
}

func (f *fakeLookups) TopicNames(_ context.Context, _ int64, ids []int64) (map[int64]string, error) {
	f.calls++
	out := map[int64]string{}
	for _, id := range ids {
		if n, ok := f.names[id]; ok {
			out[id] = n
		}
	}
	return out, f.err
}

func (f *fakeLookups) TopicActions(_ context.Context, _, id int64) ([]contracts.LinkedAction, error) {
	f.calls++
	return f.actions[id], f.err
}

func (f *fakeLookups) Accounts(context.Context, int64, ...int64) ([]contracts.AccountSummary, error) {
	return nil, f.err
}

func (f *fakeLookups) TopicDocuments(_ context.Context, _ int64, _ []int64, _ int) ([]contracts.LinkedDocument, error) {
	return f.docs, f.err
}

func act(id int64, priority int) contracts.LinkedAction {
	return contracts.LinkedAction{TopicActionID: id, ActionID: id * 10, Priority: priority}
}

func TestTriggeredOrder(t *testing.T) {
	a := TopicAssignment{Actions: map[int64][]contracts.LinkedAction{
		7: {act(1, 5), act(2, 1)},
		3: {act(3, 5), act(4, 2), act(6, 5)},
		9: {act(5, 0)},
	}}
	tests := []struct {
		name  string
		added []int64
		want  []int64 // topic action ids
	}{
		{"nothing added", nil, nil},
		{"one topic by priority", []int64{7}, []int64{2, 1}},
		{"priority, then topic, then mapping", []int64{7, 3}, []int64{2, 4, 3, 6, 1}},
		{"request order does not matter", []int64{3, 7}, []int64{2, 4, 3, 6, 1}},
		{"only added topics", []int64{9, 3}, []int64{5, 4, 3, 6}},
		{"topic without actions", []int64{42}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []int64
			for _, tr := range a.Triggered(tt.added, nil) {
				got = append(got, tr.TopicActionID)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("order %v, want %v", got, tt.want)
			}
		})
	}
}

// confirm is an action that needs a human (RequiresConfirmation).
func confirm(id int64, priority int) contracts.LinkedAction {
	a := act(id, priority)
	a.RequiresConfirmation = true
	return a
}

func TestTriggeredRequiresConfirmation(t *testing.T) {
	actions := map[int64][]contracts.LinkedAction{
		7: {act(1, 5), confirm(2, 1)},
		3: {confirm(3, 0), act(4, 2)},
	}
	type fired struct {
		id        int64
		confirmed bool
	}
	tests := []struct {
		name      string
		source    string
		had       []int64
		hadSource string
		topics    []int64
		want      []fired
	}{
		{"detection fires only what needs no human", SourceAuto, nil, "", []int64{7, 3},
			[]fired{{4, false}, {1, false}}},
		{"an agent's assignment fires everything", SourceManual, nil, "", []int64{7, 3},
			[]fired{{3, false}, {2, false}, {4, false}, {1, false}}},
		{"an agent keeping detected topics confirms the held actions", SourceManual, []int64{7, 3}, SourceAuto, []int64{7, 3},
			[]fired{{3, true}, {2, true}}},
		{"kept detected topic confirmed, new topic fired whole", SourceManual, []int64{3}, SourceAuto, []int64{3, 7},
			[]fired{{3, true}, {2, false}, {1, false}}},
		{"a dropped detected topic is not confirmed", SourceManual, []int64{7, 3}, SourceAuto, []int64{7},
			[]fired{{2, true}}},
		{"manual over manual fires nothing again", SourceManual, []int64{7, 3}, SourceManual, []int64{7, 3}, nil},
		{"detection again holds the new topic's confirmation", SourceAuto, []int64{7}, SourceAuto, []int64{7, 3},
			[]fired{{4, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := TopicAssignment{TopicIDs: tt.topics, Actions: actions, Source: tt.source}
			var got []fired
			for _, tr := range a.Triggered(a.Changes(tt.had, tt.hadSource)) {
				got = append(got, fired{tr.TopicActionID, tr.Confirmed})
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("fired %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNormalizeTopicIDs(t *testing.T) {
	many := make([]int64, 21)
	for i := range many {
		many[i] = int64(i + 1)
	}
	dupes := append(append([]int64{}, many[:20]...), many[:20]...)
	tests := []struct {
		name    string
		in      []int64
		want    []int64
		invalid bool
	}{
		{"absent", nil, nil, true},
		{"empty clears", []int64{}, []int64{}, false},
		{"duplicates dropped in order", []int64{4, 2, 4, 9, 2}, []int64{4, 2, 9}, false},
		{"zero", []int64{1, 0}, nil, true},
		{"negative", []int64{-3}, nil, true},
		{"21 distinct", many, nil, true},
		{"20 distinct given twice", dupes, many[:20], false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NormalizeTopicIDs(tt.in)
			if tt.invalid {
				var ae *apperr.Error
				if !errors.As(err, &ae) || ae.Code != apperr.Invalid || ae.Fields["topicIds"] == "" {
					t.Fatalf("error %v, want a 400 naming topicIds", err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("%v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestPrepareTopics(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { return now }
	look := &fakeLookups{names: map[int64]string{1: "Billing", 2: "Shipping"},
		actions: map[int64][]contracts.LinkedAction{2: {act(8, 1)}}}

	a, err := PrepareTopics(context.Background(), look, clock, 5, []int64{2, 1, 2}, SourceManual)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.TopicIDs, []int64{2, 1}) || a.Names[1] != "Billing" || a.Names[2] != "Shipping" ||
		len(a.Actions[2]) != 1 || a.Source != SourceManual || !a.NamesAsOf.Before(now) {
		t.Fatalf("assignment %+v", a)
	}

	_, err = PrepareTopics(context.Background(), look, clock, 5, []int64{9, 1, 4}, SourceManual)
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Code != apperr.Invalid || ae.Fields["topicIds"] != "unknown topics: 9, 4" {
		t.Fatalf("unknown topics: %v", err)
	}

	look.calls = 0
	if a, err = PrepareTopics(context.Background(), look, clock, 5, []int64{}, SourceAuto); err != nil || len(a.TopicIDs) != 0 || look.calls != 0 {
		t.Fatalf("empty list: %+v %v, %d lookups", a, err, look.calls)
	}

	look.err = apperr.E(apperr.Unavailable, "topics is down")
	if _, err = PrepareTopics(context.Background(), look, clock, 5, []int64{1}, SourceManual); !apperr.Is(err, apperr.Unavailable) {
		t.Fatalf("lookup failure: %v", err)
	}
}

// Plan, against the message under its lock: the manual list survives the
// assistant, the same list changes only its source, anything else replaces
// it and fires the added topics' actions.
func TestTopicPlan(t *testing.T) {
	auto := contracts.LinkedAction{TopicActionID: 1, ActionID: 10, Priority: 1}
	held := contracts.LinkedAction{TopicActionID: 2, ActionID: 20, Priority: 2, RequiresConfirmation: true}
	actions := map[int64][]contracts.LinkedAction{7: {auto, held}, 8: {auto}}
	for _, tc := range []struct {
		name      string
		a         TopicAssignment
		had       []int64
		hadSource string
		want      TopicPlan
		err       error
	}{
		{"auto over manual", TopicAssignment{TopicIDs: []int64{7}, Source: SourceAuto}, []int64{8}, SourceManual, TopicPlan{}, ErrManualTopicsKept},
		{"auto over an emptied manual list", TopicAssignment{TopicIDs: []int64{7}, Source: SourceAuto, Actions: actions}, nil, SourceManual,
			TopicPlan{Replace: true, Added: []int64{7}, Triggered: []TriggeredAction{{TopicID: 7, LinkedAction: auto}}}, nil},
		{"first detection holds the confirmation", TopicAssignment{TopicIDs: []int64{7}, Source: SourceAuto, Actions: actions}, nil, "",
			TopicPlan{Replace: true, Added: []int64{7}, Triggered: []TriggeredAction{{TopicID: 7, LinkedAction: auto}}}, nil},
		{"same list, same source", TopicAssignment{TopicIDs: []int64{7}, Source: SourceManual, Actions: actions}, []int64{7}, SourceManual, TopicPlan{}, nil},
		{"agent confirms the assistant's list", TopicAssignment{TopicIDs: []int64{7}, Source: SourceManual, Actions: actions}, []int64{7}, SourceAuto,
			TopicPlan{SourceOnly: true, Triggered: []TriggeredAction{{TopicID: 7, LinkedAction: held, Confirmed: true}}}, nil},
		{"manual adds one", TopicAssignment{TopicIDs: []int64{7, 8}, Source: SourceManual, Actions: actions}, []int64{7}, SourceManual,
			TopicPlan{Replace: true, Added: []int64{8}, Triggered: []TriggeredAction{{TopicID: 8, LinkedAction: auto}}}, nil},
		{"manual removes one", TopicAssignment{TopicIDs: []int64{7}, Source: SourceManual, Actions: actions}, []int64{7, 8}, SourceManual,
			TopicPlan{Replace: true}, nil},
		{"clearing", TopicAssignment{TopicIDs: []int64{}, Source: SourceManual}, []int64{7}, SourceManual, TopicPlan{Replace: true}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.a.Plan(tc.had, tc.hadSource)
			if !errors.Is(err, tc.err) || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Plan = %+v, %v; want %+v, %v", got, err, tc.want, tc.err)
			}
		})
	}
}
