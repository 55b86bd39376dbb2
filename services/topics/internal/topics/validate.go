package topics

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/textfield"
)

// Bounds of the fields (characters for text).
const (
	MaxNameLen        = 200
	MaxDescriptionLen = 2000
	MaxHookNameLen    = 200
	MaxTitleLen       = 300
	MaxContentLen     = 100_000
	// Priorities order the actions of a topic; lower runs first.
	MinPriority = 0
	MaxPriority = 10_000
	// Relevance scores rank a topic's documents; higher is more relevant.
	MinRelevance = 0
	MaxRelevance = 100
	// MaxBulkItems bounds one bulk request.
	MaxBulkItems = 100
	// MaxLookupIDs bounds the ids of one RPC lookup.
	MaxLookupIDs = 1000
)

// checkFilterText validates a text filter of a list (a query parameter):
// what reaches PostgreSQL is valid UTF-8 without NUL.
func checkFilterText(field, s string, max int) error {
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > max || strings.ContainsRune(s, 0) {
		return queryError(field, fmt.Sprintf("must be at most %d characters without control characters", max))
	}
	return nil
}

// fieldError is the 400 naming one invalid field.
func fieldError(field, msg string) error {
	var v apperr.Validation
	v.Add(field, msg)
	return v.Err()
}

// queryError is the 400 naming one invalid query parameter.
func queryError(field, msg string) error {
	err := fieldError(field, msg)
	err.(*apperr.Error).Message = "the request has invalid query parameters"
	return err
}

func checkID(v *apperr.Validation, field string, id *int64, required bool) {
	switch {
	case id == nil:
		if required {
			v.Add(field, "is required")
		}
	case *id <= 0:
		v.Add(field, "must be a positive integer")
	}
}

func checkRange(v *apperr.Validation, field string, n *int64, min, max int64) {
	switch {
	case n == nil:
		v.Add(field, "is required")
	case *n < min || *n > max:
		v.Add(field, fmt.Sprintf("must be an integer from %d to %d", min, max))
	}
}

// TopicInput is the create and update request of a topic (PUT replaces both
// fields; a missing description becomes empty).
type TopicInput struct {
	Name        string
	Description string
}

// Normalize trims and validates the input.
func (in TopicInput) Normalize() (TopicInput, error) {
	in.Name = strings.TrimSpace(in.Name)
	in.Description = strings.TrimSpace(in.Description)
	var v apperr.Validation
	textfield.Line(&v, "name", in.Name, true, MaxNameLen)
	textfield.Multiline(&v, "description", in.Description, false, MaxDescriptionLen)
	return in, v.Err()
}

// ActionInput is the create and update request of an action.
type ActionInput struct {
	Name      string
	HookName  string
	ChannelID *int64
	IsActive  *bool // default true
	// RequiresConfirmation defaults to false.
	RequiresConfirmation *bool
}

// Normalize validates the input into an Action.
func (in ActionInput) Normalize() (Action, error) {
	a := Action{Name: strings.TrimSpace(in.Name), HookName: strings.TrimSpace(in.HookName), ChannelID: in.ChannelID, IsActive: true}
	if in.IsActive != nil {
		a.IsActive = *in.IsActive
	}
	if in.RequiresConfirmation != nil {
		a.RequiresConfirmation = *in.RequiresConfirmation
	}
	var v apperr.Validation
	textfield.Line(&v, "name", a.Name, true, MaxNameLen)
	textfield.Line(&v, "hookName", a.HookName, true, MaxHookNameLen)
	checkID(&v, "channelID", a.ChannelID, false)
	return a, v.Err()
}

// DocumentInput is the create and update request of a document.
type DocumentInput struct {
	Title     string
	Content   string
	ChannelID *int64
	HookName  string
	IsHook    *bool // default false
}

// Normalize validates the input into a Document. A hook document (filled by
// a hook at run time) must name its hook.
func (in DocumentInput) Normalize() (Document, error) {
	d := Document{Title: strings.TrimSpace(in.Title), Content: in.Content, ChannelID: in.ChannelID, HookName: strings.TrimSpace(in.HookName)}
	if in.IsHook != nil {
		d.IsHook = *in.IsHook
	}
	var v apperr.Validation
	textfield.Line(&v, "title", d.Title, true, MaxTitleLen)
	textfield.Multiline(&v, "content", d.Content, false, MaxContentLen)
	textfield.Line(&v, "hookName", d.HookName, false, MaxHookNameLen)
	checkID(&v, "channelID", d.ChannelID, false)
	v.Check(!d.IsHook || d.HookName != "", "hookName", "is required when isHook is true")
	return d, v.Err()
}

// TopicActionInput is one requested topic-action mapping.
type TopicActionInput struct {
	TopicID  *int64
	ActionID *int64
	Priority *int64
	IsActive *bool // default true
}

// NewTopicAction is a validated mapping to create.
type NewTopicAction struct {
	TopicID  int64
	ActionID int64
	Priority int
	IsActive bool
}

func (in TopicActionInput) validate(v *apperr.Validation) NewTopicAction {
	checkID(v, "topicID", in.TopicID, true)
	checkID(v, "actionID", in.ActionID, true)
	checkRange(v, "priority", in.Priority, MinPriority, MaxPriority)
	out := NewTopicAction{IsActive: true}
	if in.TopicID != nil {
		out.TopicID = *in.TopicID
	}
	if in.ActionID != nil {
		out.ActionID = *in.ActionID
	}
	if in.Priority != nil {
		out.Priority = int(*in.Priority)
	}
	if in.IsActive != nil {
		out.IsActive = *in.IsActive
	}
	return out
}

// ValidateTopicActions checks a bulk request: 1 to MaxBulkItems items, each
// valid, no (topic, action) pair twice. Problems are named "items[i].field".
func ValidateTopicActions(items []TopicActionInput) ([]NewTopicAction, error) {
	var v apperr.Validation
	switch {
	case len(items) == 0:
		v.Add("items", "must hold at least one item")
	case len(items) > MaxBulkItems:
		v.Add("items", fmt.Sprintf("must hold at most %d items", MaxBulkItems))
	}
	if !v.Empty() {
		return nil, v.Err()
	}
	out := make([]NewTopicAction, len(items))
	first := map[[2]int64]int{}
	for i, in := range items {
		var iv apperr.Validation
		out[i] = in.validate(&iv)
		if iv.Empty() {
			pair := [2]int64{out[i].TopicID, out[i].ActionID}
			if j, dup := first[pair]; dup {
				iv.Add("actionID", fmt.Sprintf("repeats the topic and action of items[%d]", j))
			} else {
				first[pair] = i
			}
		}
		v.Merge(itemPrefix(i), &iv)
	}
	return out, v.Err()
}

func itemPrefix(i int) string { return fmt.Sprintf("items[%d].", i) }

// TopicActionRefs is what the store found, inside the creating transaction,
// about the references of the mappings to create.
type TopicActionRefs struct {
	Topics   map[int64]bool    // live topics of the customer among the items'
	Actions  map[int64]bool    // actions of the customer among the items'
	Existing map[[2]int64]bool // (topic, action) pairs already mapped
}

// CheckTopicActionRefs turns missing references into a 400 and existing
// pairs into a 409, naming each failing item: by index when bulk, by field
// alone for a single create. Missing references win over conflicts.
func CheckTopicActionRefs(items []NewTopicAction, refs TopicActionRefs, bulk bool) error {
	var missing, conflict apperr.Validation
	prefix := func(i int) string {
		if bulk {
			return itemPrefix(i)
		}
		return ""
	}
	for i, it := range items {
		if !refs.Topics[it.TopicID] {
			missing.Add(prefix(i)+"topicID", "no topic with this id")
		}
		if !refs.Actions[it.ActionID] {
			missing.Add(prefix(i)+"actionID", "no action with this id")
		}
		if refs.Existing[[2]int64{it.TopicID, it.ActionID}] {
			conflict.Add(prefix(i)+"actionID", "is already mapped to this topic")
		}
	}
	if err := missing.Err(); err != nil {
		return err
	}
	if err := conflict.Err(); err != nil {
		e := err.(*apperr.Error)
		e.Code = apperr.Conflict
		e.Message = "a mapping of this topic and action already exists"
		if bulk {
			e.Message = "some items map a topic and action that are already mapped"
		}
		return e
	}
	return nil
}

// TopicDocumentInput is the create request of a topic-document mapping.
type TopicDocumentInput struct {
	TopicID        *int64
	DocumentID     *int64
	RelevanceScore *int64
}

// Normalize validates the input.
func (in TopicDocumentInput) Normalize() (TopicDocument, error) {
	var v apperr.Validation
	checkID(&v, "topicID", in.TopicID, true)
	checkID(&v, "documentID", in.DocumentID, true)
	checkRange(&v, "relevanceScore", in.RelevanceScore, MinRelevance, MaxRelevance)
	if err := v.Err(); err != nil {
		return TopicDocument{}, err
	}
	return TopicDocument{TopicID: *in.TopicID, DocumentID: *in.DocumentID, RelevanceScore: int(*in.RelevanceScore)}, nil
}

// PageMappingInput is the create and update request of a page mapping.
type PageMappingInput struct {
	TopicID    *int64
	URLPattern string
	MatchType  string
}

// Normalize validates the input; the pattern is normalised like a looked-up
// URL so that the two compare as strings.
func (in PageMappingInput) Normalize() (PageMapping, error) {
	var v apperr.Validation
	checkID(&v, "topicID", in.TopicID, true)
	pattern, err := NormalizeURL(in.URLPattern)
	if err != nil {
		v.Add("urlPattern", err.Error())
	}
	mt := MatchType(strings.ToLower(strings.TrimSpace(in.MatchType)))
	switch {
	case in.MatchType == "":
		v.Add("matchType", "is required")
	case mt != MatchExact && mt != MatchPrefix:
		v.Add("matchType", "must be exact or prefix")
	}
	if err := v.Err(); err != nil {
		return PageMapping{}, err
	}
	return PageMapping{TopicID: *in.TopicID, URLPattern: pattern, MatchType: mt}, nil
}

// TopicSort is a whitelisted ordering of the topic list.
type TopicSort struct {
	ByName bool // else by topicID
	Desc   bool
}

// ParseTopicSort reads the sort parameter: name, -name, topicID or -topicID
// (case-insensitive); empty means topicID.
func ParseTopicSort(raw string) (TopicSort, error) {
	raw = strings.TrimSpace(raw)
	var s TopicSort
	if raw == "" {
		return s, nil
	}
	key := raw
	if strings.HasPrefix(key, "-") {
		s.Desc, key = true, key[1:]
	}
	switch strings.ToLower(key) {
	case "topicid":
		return s, nil
	case "name":
		s.ByName = true
		return s, nil
	}
	return TopicSort{}, queryError("sort", "must be one of name, -name, topicID, -topicID")
}

// TopicFilter narrows the topic list.
type TopicFilter struct {
	NameContains string // case-insensitive substring; "" = all
	Sort         TopicSort
}

// TopicActionFilter narrows the topic-action list; nil or "" = no filter.
// HookName and ChannelID are the linked action's.
type TopicActionFilter struct {
	TopicID   *int64
	ActionID  *int64
	HookName  string
	ChannelID *int64
	IsActive  *bool
}

// TopicDocumentFilter narrows the topic-document list; ChannelID, HookName
// and IsHook are the linked document's.
type TopicDocumentFilter struct {
	TopicID    *int64
	DocumentID *int64
	ChannelID  *int64
	HookName   string
	IsHook     *bool
}

// PageMappingFilter narrows the page-mapping list.
type PageMappingFilter struct {
	TopicID   *int64
	MatchType MatchType
}
