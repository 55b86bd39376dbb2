package tickets

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"supportplatform.dev/pkg/apperr"
)

// TicketCursor is a position in a list of tickets (keyset paging): the
// sort keys of the last ticket of a page. The next page holds the tickets
// strictly after it in the list's order, so a deep page reads only its own
// rows, never the ones before it.
type TicketCursor struct {
	At time.Time // created_at or updated_at of the last ticket (unused when sorting by ticketID)
	ID int64
}

// TicketList is a page of a list: its tickets, the count of the whole list,
// and the cursor of the next page ("" on the last one).
type TicketList struct {
	Items []TicketDetails
	Total int
	// More tells the store found tickets after the page.
	More bool
	Next string
}

// cursorVersion prefixes every cursor, so the format may change.
const cursorVersion = "t1"

// listFingerprint names a customer's list: its filters and sort, not its
// position nor its page size. A cursor carries it, so a cursor is refused
// by another customer's list or a list with other filters.
func listFingerprint(customerID int64, f TicketFilter) string {
	opt := func(p *int64) string {
		if p == nil {
			return "-"
		}
		return strconv.FormatInt(*p, 10)
	}
	optTime := func(p *time.Time) string {
		if p == nil {
			return "-"
		}
		return strconv.FormatInt(p.UnixMicro(), 10)
	}
	status, closed := "-", "-"
	if f.Status != nil {
		status = string(*f.Status)
	}
	if f.IsClosed != nil {
		closed = strconv.FormatBool(*f.IsClosed)
	}
	canonical := strings.Join([]string{strconv.FormatInt(customerID, 10), status, closed, opt(f.ChannelID),
		opt(f.EndUserID), opt(f.CustomerRepID), opt(f.TopicID), optTime(f.CreatedFrom), optTime(f.CreatedBefore),
		strconv.Quote(f.Q), f.Sort.By, strconv.FormatBool(f.Sort.Desc)}, "\x00")
	sum := sha256.Sum256([]byte(canonical))
	return hex.EncodeToString(sum[:12])
}

// EncodeCursor is the opaque cursor of the position after t in the
// customer's list f.
func EncodeCursor(customerID int64, f TicketFilter, t Ticket) string {
	at := int64(0)
	switch f.Sort.By {
	case TicketSortCreated:
		at = t.CreatedAt.UnixMicro()
	case TicketSortUpdated:
		at = t.UpdatedAt.UnixMicro()
	}
	raw := fmt.Sprintf("%s.%d.%d.%s", cursorVersion, at, t.ID, listFingerprint(customerID, f))
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// cursorProblem is the 400 of a cursor that cannot be used.
func cursorProblem(msg string) error {
	return apperr.Field("cursor", msg, "invalid cursor")
}

// DecodeCursor reads a cursor for the customer's list f: one this list gave
// (same customer, filters and sort), else a 400 naming cursor. It never
// reaches the store: a cursor only positions the list, whose query always
// names the token's customer and the request's filters.
func DecodeCursor(customerID int64, f TicketFilter, raw string) (TicketCursor, error) {
	if len(raw) > 200 {
		return TicketCursor{}, cursorProblem("is not a cursor of this API")
	}
	b, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil {
		return TicketCursor{}, cursorProblem("is not a cursor of this API")
	}
	parts := strings.Split(string(b), ".")
	if len(parts) != 4 || parts[0] != cursorVersion {
		return TicketCursor{}, cursorProblem("is not a cursor of this API")
	}
	at, err1 := strconv.ParseInt(parts[1], 10, 64)
	id, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || id < 1 || strconv.FormatInt(at, 10) != parts[1] || strconv.FormatInt(id, 10) != parts[2] {
		return TicketCursor{}, cursorProblem("is not a cursor of this API")
	}
	if parts[3] != listFingerprint(customerID, f) {
		return TicketCursor{}, cursorProblem("belongs to another list: send the same filters and sort as the request that returned it")
	}
	if f.Sort.By == TicketSortID && at != 0 {
		return TicketCursor{}, cursorProblem("is not a cursor of this API")
	}
	// Years 1 to 9999, within PostgreSQL's timestamptz range.
	const minMicros, maxMicros = -62135596800000000, 253402300799999999
	if at < minMicros || at > maxMicros {
		return TicketCursor{}, cursorProblem("is not a cursor of this API")
	}
	return TicketCursor{At: time.UnixMicro(at).UTC(), ID: id}, nil
}
