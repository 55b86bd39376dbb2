package tickets

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/pkg/textfield"
)

// Bounds of the Tickets API.
const (
	// MaxSearchLen bounds the list's full-text query q (characters).
	MaxSearchLen = 500
	// MaxBulkTickets bounds the ids of one bulk update.
	MaxBulkTickets = 500
	// FallbackSearchConfig stems a search query whose language is not
	// recognised (most one- or two-word queries): "refunds" then still
	// finds "refund". The 'simple' match on exact words always applies too.
	FallbackSearchConfig = "english"
)

// TicketDetails is a ticket as the API shows it: with the escalation
// comments of its messages (aiFeedbackComments), oldest first.
type TicketDetails struct {
	Ticket
	FeedbackComments []FeedbackComment
}

// Sort keys of tickets.
const (
	TicketSortCreated = "dateCreated"
	TicketSortUpdated = "dateUpdated"
	TicketSortID      = "ticketID"
)

// TicketSort orders a list of tickets; the id breaks ties in the same
// direction.
type TicketSort struct {
	By   string // TicketSortCreated, TicketSortUpdated or TicketSortID
	Desc bool
}

// ParseTicketSort reads the sort parameter: dateCreated, dateUpdated or
// ticketID, each with a leading - for descending order; the default is
// -dateCreated (newest first).
func ParseTicketSort(raw string) (TicketSort, error) {
	if raw == "" {
		return TicketSort{By: TicketSortCreated, Desc: true}, nil
	}
	key, desc := strings.CutPrefix(raw, "-")
	for _, by := range []string{TicketSortCreated, TicketSortUpdated, TicketSortID} {
		if strings.EqualFold(key, by) {
			return TicketSort{By: by, Desc: desc}, nil
		}
	}
	return TicketSort{}, apperr.Field("sort", "must be dateCreated, dateUpdated or ticketID, optionally preceded by -", "invalid sort")
}

// TicketFilter selects tickets; nil and "" select everything.
type TicketFilter struct {
	Status        *Status
	IsClosed      *bool
	ChannelID     *int64
	EndUserID     *int64
	CustomerRepID *int64
	// TopicID: tickets with a message carrying the topic.
	TopicID *int64
	// CreatedFrom is inclusive, CreatedBefore exclusive.
	CreatedFrom   *time.Time
	CreatedBefore *time.Time
	// Q is a full-text query over the subject and every message
	// (websearch syntax: words, "phrases", or, -word).
	Q string
	// SearchConfig is the text search configuration that stems Q.
	SearchConfig string
	Sort         TicketSort
	// Cursor is the client's cursor (keyset paging), "" for none; the
	// service decodes it into After, the position the store starts after.
	Cursor string
	After  *TicketCursor
}

// ByStatusOnly tells whether the filter selects by status and isClosed
// alone, so its count is a sum of the per-status counters.
func (f TicketFilter) ByStatusOnly() bool {
	return f.ChannelID == nil && f.EndUserID == nil && f.CustomerRepID == nil && f.TopicID == nil &&
		f.CreatedFrom == nil && f.CreatedBefore == nil && f.Q == ""
}

// Statuses lists the states the filter admits (every one when it has no
// status or isClosed).
func (f TicketFilter) Statuses() []Status {
	var out []Status
	for _, s := range Statuses {
		if f.Status != nil && *f.Status != s {
			continue
		}
		if f.IsClosed != nil && *f.IsClosed != (s == StatusClosed) {
			continue
		}
		out = append(out, s)
	}
	return out
}

// ParseListTime reads a createdFrom or createdTo value: RFC 3339
// (2026-01-31T10:00:00Z, with any offset or fractional seconds), the same
// without an offset (UTC), or a bare date (2026-01-31, the whole UTC day).
// It returns the first instant it covers and the first instant after it.
func ParseListTime(raw string) (from, after time.Time, ok bool) {
	if t, err := time.Parse("2006-01-02", raw); err == nil {
		return t, t.AddDate(0, 0, 1), true
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999"} {
		if t, err := time.Parse(layout, raw); err == nil {
			t = t.UTC()
			// PostgreSQL keeps microseconds: the instant "after" t is the
			// next microsecond.
			t = t.Truncate(time.Microsecond)
			return t, t.Add(time.Microsecond), true
		}
	}
	return time.Time{}, time.Time{}, false
}

// CreateTicketInput is POST /api/Tickets: a ticket, optionally assigned.
type CreateTicketInput struct {
	TicketInput
	CustomerRepID *int64
}

// TicketPatch is PUT /api/Tickets/{id}: only the fields given change.
type TicketPatch struct {
	Subject  *string
	Status   *string
	IsClosed *bool
	// CustomerRepIDSet: customerRepID was in the body; CustomerRepID nil
	// (JSON null) unassigns.
	CustomerRepIDSet bool
	CustomerRepID    *int64
	// CustomFields replaces the object when not nil (JSON null is {}).
	CustomFields json.RawMessage
	ChannelID    *int64
}

// BulkAction is what a bulk update does to every ticket.
type BulkAction string

// The bulk actions.
const (
	BulkClose    BulkAction = "close"
	BulkReopen   BulkAction = "reopen"
	BulkAssign   BulkAction = "assign"
	BulkEscalate BulkAction = "escalate"
)

// BulkInput is POST /api/Tickets/bulk-update.
type BulkInput struct {
	TicketIDs     []int64
	Action        string
	CustomerRepID *int64
}

// TicketChange is a changed ticket and the state it left (Previous ==
// Status when the state did not change).
type TicketChange struct {
	Ticket   Ticket
	Previous Status
}

// TicketStore is the persistence the Tickets API needs. UpdateTicket and
// BulkUpdateTickets lock the tickets and call change in the transaction,
// with the tickets as they are now.
type TicketStore interface {
	// ListTickets returns the page (after f.After when set, then p's
	// offset is 0) with More telling whether tickets follow it.
	ListTickets(ctx context.Context, customerID int64, f TicketFilter, p paging.Page) (TicketList, error)
	TicketDetails(ctx context.Context, customerID, id int64) (TicketDetails, error)
	CreateTicket(ctx context.Context, customerID int64, in NewTicket) (TicketDetails, error)
	UpdateTicket(ctx context.Context, customerID, id int64, change func(Ticket) (Ticket, error)) error
	DeleteTicket(ctx context.Context, customerID, id int64) error
	BulkUpdateTickets(ctx context.Context, customerID int64, ids []int64, change func([]Ticket) ([]TicketChange, error)) error
	Conversation(ctx context.Context, customerID, id int64) (Ticket, []Message, error)
}

// TicketLookups are what Tickets asks other services (package lookup
// implements them over NATS): channels, and accounts for the customer rep.
type TicketLookups interface {
	ChannelLookup
	Accounts(ctx context.Context, customerID int64, ids ...int64) ([]contracts.AccountSummary, error)
}

// Tickets is the Tickets API's domain: validation, the state rules, the
// lookups of channels and accounts, then the store.
type Tickets struct {
	store TicketStore
	look  TicketLookups
}

// NewTickets returns the tickets service.
func NewTickets(store TicketStore, look TicketLookups) *Tickets {
	return &Tickets{store: store, look: look}
}

// ListTickets pages through the customer's tickets, by page number or
// after a cursor (keyset paging: the page starts after the cursor's ticket
// instead of skipping the ones before it). Next is the cursor of the
// following page whenever tickets follow, whichever way the page was asked.
func (s *Tickets) ListTickets(ctx context.Context, customerID int64, f TicketFilter, p paging.Page) (TicketList, error) {
	if f.Q != "" && f.SearchConfig == "" {
		f.SearchConfig = SearchConfig(f.Q)
	}
	f.After = nil
	if f.Cursor != "" {
		c, err := DecodeCursor(customerID, f, f.Cursor)
		if err != nil {
			return TicketList{}, err
		}
		f.After, p.Number = &c, 1
	}
	l, err := s.store.ListTickets(ctx, customerID, f, p)
	if err != nil {
		return TicketList{}, err
	}
	if l.More && len(l.Items) > 0 {
		l.Next = EncodeCursor(customerID, f, l.Items[len(l.Items)-1].Ticket)
	}
	return l, nil
}

// SearchConfig is the text search configuration that stems a query. The
// answers for the latest queries are remembered (queryConfigs): language
// detection took about a third of the service's CPU per search (270 us of a
// two-word query, make bench tickets-search), and an agent pages through
// one search, or runs it again, with the same q.
func SearchConfig(q string) string {
	if cfg, ok := queryConfigs.get(q); ok {
		return cfg
	}
	cfg := FallbackSearchConfig
	if lang, c := TextLanguage(q); lang != "" && c != "simple" {
		cfg = c
	}
	queryConfigs.put(q, cfg)
	return cfg
}

// queryConfigs remembers SearchConfig's answers, a pure function of the
// query.
var queryConfigs = &configMemo{max: 4096}

// configMemo is a bounded map from a query to its search configuration:
// when full, it starts again empty (at most max queries of MaxSearchLen
// characters, a few MB at worst).
type configMemo struct {
	mu  sync.Mutex
	max int
	m   map[string]string
}

func (c *configMemo) get(q string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cfg, ok := c.m[q]
	return cfg, ok
}

func (c *configMemo) put(q, cfg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= c.max {
		c.m = make(map[string]string, 256)
	}
	c.m[q] = cfg
}

// Ticket returns one ticket of the customer.
func (s *Tickets) Ticket(ctx context.Context, customerID, id int64) (TicketDetails, error) {
	return s.store.TicketDetails(ctx, customerID, id)
}

// CreateTicket validates and inserts a ticket (ticket.created).
func (s *Tickets) CreateTicket(ctx context.Context, customerID int64, in CreateTicketInput) (TicketDetails, error) {
	nt, err := ValidateTicket(ctx, s.look, customerID, in.TicketInput)
	if err != nil {
		return TicketDetails{}, err
	}
	if in.CustomerRepID != nil {
		if err := s.checkRep(ctx, customerID, *in.CustomerRepID); err != nil {
			return TicketDetails{}, err
		}
		nt.CustomerRepID = in.CustomerRepID
	}
	return s.store.CreateTicket(ctx, customerID, nt)
}

// checkRep requires an enabled admin or agent account of the customer.
func (s *Tickets) checkRep(ctx context.Context, customerID, accountID int64) error {
	bad := apperr.Field("customerRepID", "must be an enabled admin or agent account of yours", "invalid customerRepID")
	if accountID <= 0 {
		return bad
	}
	accounts, err := s.look.Accounts(ctx, customerID, accountID)
	if err != nil {
		return err
	}
	for _, a := range accounts {
		if a.AccountID == accountID && (a.Role == authn.RoleAdmin || a.Role == authn.RoleAgent) {
			return nil
		}
	}
	return bad
}

// patchPlan is a validated TicketPatch.
type patchPlan struct {
	subject      *string
	status       *Status
	closed       *bool // isClosed alone
	repSet       bool
	rep          *int64
	customFields json.RawMessage
	channelID    *int64
}

func (s *Tickets) planPatch(ctx context.Context, customerID int64, p TicketPatch) (patchPlan, error) {
	var v apperr.Validation
	var out patchPlan
	if p.Subject != nil {
		subj := strings.TrimSpace(*p.Subject)
		textfield.Line(&v, "subject", subj, true, MaxSubjectLen)
		out.subject = &subj
	}
	if p.Status != nil {
		st, ok := ParseStatus(*p.Status)
		v.Check(ok, "status", "must be Open, Pending, Escalated, Resolved or Closed")
		out.status = &st
		if ok && p.IsClosed != nil && *p.IsClosed != (st == StatusClosed) {
			v.Add("isClosed", "contradicts status: isClosed is true exactly when the status is Closed")
		}
	} else if p.IsClosed != nil {
		out.closed = p.IsClosed
	}
	if p.CustomFields != nil {
		fields, msg := normalizeCustomFields(p.CustomFields)
		if msg != "" {
			v.Add("customFieldsData", msg)
		}
		out.customFields = fields
	}
	if p.ChannelID != nil {
		v.Check(*p.ChannelID > 0, "channelID", "must be a positive integer")
		out.channelID = p.ChannelID
	}
	if p.CustomerRepIDSet {
		out.repSet, out.rep = true, p.CustomerRepID
		if p.CustomerRepID != nil && *p.CustomerRepID <= 0 {
			v.Add("customerRepID", "must be an enabled admin or agent account of yours, or null")
		}
	}
	if p.Subject == nil && p.Status == nil && p.IsClosed == nil && p.CustomFields == nil && p.ChannelID == nil && !p.CustomerRepIDSet {
		return out, apperr.E(apperr.Invalid,
			"the body names no field to update (subject, status, isClosed, customerRepID, customFieldsData, channelID)")
	}
	if err := v.Err(); err != nil {
		return out, err
	}
	if out.channelID != nil {
		ch, err := s.look.Channel(ctx, customerID, *out.channelID)
		if err != nil {
			return out, err
		}
		if !ch.Exists || ch.IsDeleted {
			return out, apperr.Field("channelID", "is not a live channel of yours", "the channel does not exist or is deleted")
		}
	}
	if out.rep != nil {
		if err := s.checkRep(ctx, customerID, *out.rep); err != nil {
			return out, err
		}
	}
	return out, nil
}

// apply changes a ticket as the plan says, under the transition table.
func (p patchPlan) apply(t Ticket) (Ticket, error) {
	to := t.Status
	switch {
	case p.status != nil:
		to = *p.status
	case p.closed != nil && *p.closed:
		to = StatusClosed
	case p.closed != nil && t.Status == StatusClosed:
		to = StatusOpen
	}
	if !CanTransition(t.Status, to) {
		return t, TransitionError(t.Status, to)
	}
	t.Status = to
	if p.subject != nil && *p.subject != t.Subject {
		// The store stems the new subject in its own configuration.
		t.Subject, t.SubjectConfig = *p.subject, SubjectSearchConfig(*p.subject)
	}
	if p.customFields != nil {
		t.CustomFields = p.customFields
	}
	if p.channelID != nil {
		t.ChannelID = *p.channelID
	}
	if p.repSet {
		t.CustomerRepID = p.rep
	}
	return t, nil
}

// UpdateTicket changes the fields the patch gives (ticket.updated when
// anything changed).
func (s *Tickets) UpdateTicket(ctx context.Context, customerID, id int64, p TicketPatch) error {
	plan, err := s.planPatch(ctx, customerID, p)
	if err != nil {
		return err
	}
	return s.store.UpdateTicket(ctx, customerID, id, plan.apply)
}

// DeleteTicket deletes a ticket with its messages, topics, feedback and
// attachments (ticket.deleted).
func (s *Tickets) DeleteTicket(ctx context.Context, customerID, id int64) error {
	return s.store.DeleteTicket(ctx, customerID, id)
}

// ParseBulkAction accepts an action in any case.
func ParseBulkAction(s string) (BulkAction, bool) {
	for _, a := range []BulkAction{BulkClose, BulkReopen, BulkAssign, BulkEscalate} {
		if strings.EqualFold(s, string(a)) {
			return a, true
		}
	}
	return "", false
}

// BulkUpdate applies one action to many tickets, all or nothing.
func (s *Tickets) BulkUpdate(ctx context.Context, customerID int64, in BulkInput) error {
	var v apperr.Validation
	action, ok := ParseBulkAction(strings.TrimSpace(in.Action))
	v.Check(ok, "action", "must be close, reopen, assign or escalate")
	ids := slices.Clone(in.TicketIDs)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	switch {
	case len(ids) == 0:
		v.Add("ticketIDs", "must hold at least one ticket id")
	case len(ids) > MaxBulkTickets:
		v.Add("ticketIDs", fmt.Sprintf("must hold at most %d distinct ticket ids", MaxBulkTickets))
	case ids[0] <= 0:
		v.Add("ticketIDs", "must hold positive integers")
	}
	if action == BulkAssign && in.CustomerRepID == nil {
		v.Add("customerRepID", "is required to assign")
	}
	if err := v.Err(); err != nil {
		return err
	}
	if action == BulkAssign {
		if err := s.checkRep(ctx, customerID, *in.CustomerRepID); err != nil {
			return err
		}
	}
	return s.store.BulkUpdateTickets(ctx, customerID, ids, func(ts []Ticket) ([]TicketChange, error) {
		return PlanBulk(ts, action, in.CustomerRepID)
	})
}

// PlanBulk is what a bulk action does to locked tickets: the tickets that
// change (those already in the target state, or already assigned to the
// account, are left alone), or a 409 naming every ticket the transition
// table does not let move.
func PlanBulk(ts []Ticket, action BulkAction, rep *int64) ([]TicketChange, error) {
	var to Status
	switch action {
	case BulkClose:
		to = StatusClosed
	case BulkReopen:
		to = StatusOpen
	case BulkEscalate:
		to = StatusEscalated
	}
	var out []TicketChange
	var refused []string
	for _, t := range ts {
		prev := t.Status
		if action == BulkAssign {
			if t.CustomerRepID != nil && rep != nil && *t.CustomerRepID == *rep {
				continue
			}
			t.CustomerRepID = rep
			out = append(out, TicketChange{Ticket: t, Previous: prev})
			continue
		}
		if t.Status == to {
			continue
		}
		if !CanTransition(t.Status, to) {
			refused = append(refused, strconv.FormatInt(t.ID, 10))
			continue
		}
		t.Status = to
		out = append(out, TicketChange{Ticket: t, Previous: prev})
	}
	if len(refused) > 0 {
		return nil, &apperr.Error{Code: apperr.Conflict,
			Message: fmt.Sprintf("%d tickets cannot become %s; nothing was changed", len(refused), to),
			Fields:  map[string]string{"ticketIDs": "cannot become " + string(to) + ": " + strings.Join(refused, ", ")}}
	}
	return out, nil
}

// Summary is a short account of the ticket's conversation (an extractive
// summary until the AI assistant supplies one).
func (s *Tickets) Summary(ctx context.Context, customerID, id int64) (string, error) {
	t, msgs, err := s.store.Conversation(ctx, customerID, id)
	if err != nil {
		return "", err
	}
	return Summarize(t, msgs), nil
}
