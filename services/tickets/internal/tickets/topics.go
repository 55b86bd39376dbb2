package tickets

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
)

// MaxMessageTopics bounds the distinct topics of one message.
const MaxMessageTopics = 20

// The sources of a topic assignment (contracts.TopicsAssigned.Source).
const (
	SourceManual = "manual" // PUT /api/TicketMessages/{id}/topics
	SourceAuto   = "auto"   // the assistant's detection
)

// namesSkew is how far before the lookup a topic name counts as read. A
// rename whose transaction was in flight while topics answered has an
// occurredAt a little before the answer; dating the answer earlier lets
// that topic.updated still win when it is handled after the assignment.
const namesSkew = 30 * time.Second

// TopicAssignment is a message's new list of topics with everything the
// store writes in its transaction; nothing in it is asked of another
// service inside the transaction.
type TopicAssignment struct {
	// TopicIDs is the new list: distinct, in the order given.
	TopicIDs []int64
	// Names are the topics' names as topics answered, dated NamesAsOf:
	// they replace the stored names that are older.
	Names     map[int64]string
	NamesAsOf time.Time
	// Actions are the active actions of each topic, by priority.
	Actions map[int64][]contracts.LinkedAction
	Source  string
}

// TriggeredAction is one topic.action.triggered to write.
type TriggeredAction struct {
	TopicID int64
	contracts.LinkedAction
	// Confirmed: an agent's assignment kept a topic the assistant had
	// detected, and this action, which needs a human, fires now.
	Confirmed bool
}

// Triggered returns the actions the assignment fires, ordered by priority
// (lowest number first), then topic id, then topic action id:
//   - for each topic in added (new on the message), its actions; when the
//     assistant's detection assigns (SourceAuto), only those that need no
//     human (RequiresConfirmation false);
//   - for each topic in confirmed (the assistant had put it on the message
//     and an agent's manual assignment keeps it), the actions that need a
//     human, which detection held back.
func (a TopicAssignment) Triggered(added, confirmed []int64) []TriggeredAction {
	var out []TriggeredAction
	for _, id := range added {
		for _, act := range a.Actions[id] {
			if a.Source == SourceAuto && act.RequiresConfirmation {
				continue
			}
			out = append(out, TriggeredAction{TopicID: id, LinkedAction: act})
		}
	}
	if a.Source == SourceManual {
		for _, id := range confirmed {
			for _, act := range a.Actions[id] {
				if act.RequiresConfirmation {
					out = append(out, TriggeredAction{TopicID: id, LinkedAction: act, Confirmed: true})
				}
			}
		}
	}
	slices.SortStableFunc(out, func(x, y TriggeredAction) int {
		return cmp.Or(cmp.Compare(x.Priority, y.Priority), cmp.Compare(x.TopicID, y.TopicID),
			cmp.Compare(x.TopicActionID, y.TopicActionID))
	})
	return out
}

// Changes splits an assignment against the message's current topics (had,
// set by hadSource): added are the topics new on the message; confirmed are
// the kept topics that the assistant had chosen when an agent now assigns
// by hand, whose held-back actions fire (Triggered).
func (a TopicAssignment) Changes(had []int64, hadSource string) (added, confirmed []int64) {
	on := make(map[int64]bool, len(had))
	for _, id := range had {
		on[id] = true
	}
	for _, id := range a.TopicIDs {
		switch {
		case !on[id]:
			added = append(added, id)
		case a.Source == SourceManual && hadSource == SourceAuto:
			confirmed = append(confirmed, id)
		}
	}
	return added, confirmed
}

// TopicPlan is what an assignment does to a message's topics
// (TopicAssignment.Plan); the store writes it.
type TopicPlan struct {
	// Replace: the list changes to the assignment's; Added are the topics
	// new on the message.
	Replace bool
	Added   []int64
	// SourceOnly: the same list, now under the assignment's source.
	SourceOnly bool
	// Triggered are the topic.action.triggered events to write.
	Triggered []TriggeredAction
}

// Plan decides the assignment against the message as it is under its lock
// (its topics had, set by hadSource):
//   - an automatic assignment on a message whose topics were set by hand
//     is ErrManualTopicsKept: a manual assignment committed while the
//     assistant was detecting wins;
//   - the same list changes nothing, except that an agent putting the list
//     the assistant chose makes it theirs and fires the actions that
//     waited for a human;
//   - otherwise the list is replaced and the added topics' actions fire.
func (a TopicAssignment) Plan(had []int64, hadSource string) (TopicPlan, error) {
	if a.Source == SourceAuto && hadSource == SourceManual && len(had) > 0 {
		return TopicPlan{}, ErrManualTopicsKept
	}
	added, confirmed := a.Changes(had, hadSource)
	if len(added) == 0 && len(had) == len(a.TopicIDs) {
		if a.Source != hadSource && len(had) > 0 {
			return TopicPlan{SourceOnly: true, Triggered: a.Triggered(nil, confirmed)}, nil
		}
		return TopicPlan{}, nil
	}
	return TopicPlan{Replace: true, Added: added, Triggered: a.Triggered(added, confirmed)}, nil
}

// NormalizeTopicIDs checks a requested list of topic ids: nil (absent or
// null) is a 400, [] clears; duplicates are dropped (first one kept); each
// id is positive; at most MaxMessageTopics distinct ids.
func NormalizeTopicIDs(ids []int64) ([]int64, error) {
	if ids == nil {
		return nil, apperr.Field("topicIds", "is required (an empty array removes every topic)", "topicIds is required")
	}
	out := make([]int64, 0, len(ids))
	seen := make(map[int64]bool, len(ids))
	for _, id := range ids {
		if id <= 0 {
			return nil, apperr.Field("topicIds", "must hold positive integers", "invalid topic id")
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	if len(out) > MaxMessageTopics {
		return nil, apperr.Field("topicIds", fmt.Sprintf("must hold at most %d distinct ids", MaxMessageTopics), "too many topics")
	}
	return out, nil
}

// UnknownTopics is the 400 naming the ids that are not live topics of the
// customer ("unknown topics: 4, 9").
func UnknownTopics(ids []int64) error {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatInt(id, 10)
	}
	return apperr.Field("topicIds", "unknown topics: "+strings.Join(s, ", "), "some topics do not exist")
}

// PrepareTopics builds the assignment of ids to a message: the names of
// the topics (ids that topics does not know are a 400 naming them) and
// the active actions of each, asked before any transaction.
func PrepareTopics(ctx context.Context, look Lookups, now func() time.Time, customerID int64, ids []int64, source string) (TopicAssignment, error) {
	ids, err := NormalizeTopicIDs(ids)
	if err != nil {
		return TopicAssignment{}, err
	}
	a := TopicAssignment{TopicIDs: ids, Names: map[int64]string{}, NamesAsOf: now().Add(-namesSkew),
		Actions: map[int64][]contracts.LinkedAction{}, Source: source}
	if len(ids) == 0 {
		return a, nil
	}
	names, err := look.TopicNames(ctx, customerID, ids)
	if err != nil {
		return a, err
	}
	var unknown []int64
	for _, id := range ids {
		if name, ok := names[id]; ok {
			a.Names[id] = name
		} else {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) > 0 {
		return a, UnknownTopics(unknown)
	}
	for _, id := range ids {
		if a.Actions[id], err = look.TopicActions(ctx, customerID, id); err != nil {
			return a, err
		}
	}
	return a, nil
}

// ErrManualTopicsKept is what an automatic assignment gets on a message
// whose topics were set manually: manual assignment wins, nothing changes.
var ErrManualTopicsKept = apperr.E(apperr.Conflict, "the message's topics were set manually")
