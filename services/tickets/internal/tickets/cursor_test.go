package tickets

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/paging"
)

func cursorRefused(t *testing.T, err error) {
	t.Helper()
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Code != apperr.Invalid || ae.Fields["cursor"] == "" {
		t.Fatalf("want a 400 naming cursor, got %v", err)
	}
}

// A cursor reads back as the position it was made from, only in the list
// that made it: another customer, other filters or another sort refuse it,
// and so does anything this API did not write.
func TestTkCursor(t *testing.T) {
	ch, other := int64(3), int64(4)
	st := StatusOpen
	f := TicketFilter{ChannelID: &ch, Status: &st, Q: "refund", Sort: TicketSort{By: TicketSortCreated, Desc: true}}
	tk := Ticket{ID: 42, CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 678901000, time.UTC), UpdatedAt: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)}
	raw := EncodeCursor(7, f, tk)
	c, err := DecodeCursor(7, f, raw)
	if err != nil || c.ID != 42 || !c.At.Equal(tk.CreatedAt) {
		t.Fatalf("round trip: %+v %v", c, err)
	}
	byUpdated := f
	byUpdated.Sort = TicketSort{By: TicketSortUpdated}
	if c, err := DecodeCursor(7, byUpdated, EncodeCursor(7, byUpdated, tk)); err != nil || !c.At.Equal(tk.UpdatedAt) {
		t.Fatalf("updated: %+v %v", c, err)
	}
	// The page size and the cursor itself are not the list's identity.
	again := f
	again.Cursor, again.After = raw, &c
	if _, err := DecodeCursor(7, again, raw); err != nil {
		t.Fatal(err)
	}
	otherChannel := f
	otherChannel.ChannelID = &other
	noQ := f
	noQ.Q = ""
	asc := f
	asc.Sort.Desc = false
	for name, g := range map[string]TicketFilter{"channel": otherChannel, "q": noQ, "sort": asc, "sort key": byUpdated} {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeCursor(7, g, raw)
			cursorRefused(t, err)
		})
	}
	_, err = DecodeCursor(8, f, raw)
	cursorRefused(t, err)
	b, _ := base64.RawURLEncoding.DecodeString(raw)
	parts := strings.Split(string(b), ".")
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	fp := parts[3]
	for _, bad := range []string{"", "x", "!!!", raw + "=", enc("t1.1.2"), enc("t2." + parts[1] + ".42." + fp),
		enc("t1.abc.42." + fp), enc("t1." + parts[1] + ".0." + fp), enc("t1." + parts[1] + ".-1." + fp),
		enc("t1.0" + parts[1] + ".42." + fp), enc("t1." + parts[1] + ".42." + fp + "."), enc("t1.99999999999999999999.42." + fp),
		enc("t1.999999999999999999.42." + fp), strings.Repeat("A", 300)} {
		if bad == "" {
			continue
		}
		_, err := DecodeCursor(7, f, bad)
		cursorRefused(t, err)
	}
	// A forged position in one's own list is only a position: it still
	// decodes (the query names the customer and the filters).
	if c, err := DecodeCursor(7, f, enc("t1.0.1."+fp)); err != nil || c.ID != 1 {
		t.Fatalf("forged position: %+v %v", c, err)
	}
}

// The service decodes the cursor for the store, starts from it (offset 0)
// and hands out the next page's cursor when tickets follow.
func TestTkListTicketsCursor(t *testing.T) {
	st := &tkStore{ticket: Ticket{ID: 5, CustomerID: 1, CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}}
	svc := NewTickets(st, tkLookups{})
	f := TicketFilter{Sort: TicketSort{By: TicketSortCreated, Desc: true}}
	l, err := svc.ListTickets(context.Background(), 1, f, paging.Page{Number: 1, Size: 1})
	if err != nil || l.Next == "" || st.listed.After != nil {
		t.Fatalf("first page: %+v %v %+v", l, err, st.listed)
	}
	f.Cursor = l.Next
	if _, err := svc.ListTickets(context.Background(), 1, f, paging.Page{Number: 1, Size: 1}); err != nil {
		t.Fatal(err)
	}
	if a := st.listed.After; a == nil || a.ID != 5 || !a.At.Equal(st.ticket.CreatedAt) {
		t.Fatalf("the store got %+v", st.listed.After)
	}
	st.listed = nil
	_, err = svc.ListTickets(context.Background(), 2, f, paging.Page{Number: 1, Size: 1})
	cursorRefused(t, err)
	if st.listed != nil {
		t.Fatal("another customer's cursor reached the store")
	}
}
