package httpapi

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/services/tickets/internal/tickets"
)

// FuzzTicketFilter reads any query string the server lets through (it
// refuses malformed ones and invalid UTF-8 or NUL first) as the ticket list
// does: the result is a 400 naming parameters, or a filter whose every value
// obeys its syntax and whose time range is not empty.
func FuzzTicketFilter(f *testing.F) {
	for _, s := range []string{"", "status=open&isClosed=false&channelId=1&endUserId=2&customerRepId=3&topicId=4",
		"sort=-dateUpdated&createdFrom=2026-01-01&createdTo=2026-01-31&q=printer+%22paper+jam%22",
		"createdFrom=2026-01-31T10:00:00Z&createdTo=2026-01-31T10:00:00Z", "createdFrom=2026-02-01&createdTo=2026-01-31",
		"createdFrom=2026-01-31T10:00:00.0000001Z&createdTo=2026-01-31T10:00:00Z", "STATUS=Closed&status=open",
		"status=done", "isClosed=yes", "channelId=0", "topicId=01", "sort=name", "q=%20%20", "pageSize=101&pageNumber=0",
		"createdTo=9999-12-31T23:59:59.9999999-23:59", "createdFrom=0000-01-01T00:00:00%2B23:59", "q=" + strings.Repeat("x", 501)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		vals, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		for k, vs := range vals {
			for _, v := range append(vs, k) {
				if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
					return
				}
			}
		}
		q := httpserver.ParseQuery(vals)
		pg := q.Page()
		fl := ticketFilter(q)
		if err := q.Err(); err != nil {
			var ae *apperr.Error
			if !errors.As(err, &ae) || ae.Code != apperr.Invalid || len(ae.Fields) == 0 || httpserver.StatusFor(err) != 400 {
				t.Fatalf("%q: %v is not a 400 naming parameters", raw, err)
			}
			return
		}
		if pg.Size < 1 || pg.Size > 100 || pg.Number < 1 {
			t.Fatalf("%q: page %+v", raw, pg)
		}
		switch fl.Sort.By {
		case tickets.TicketSortCreated, tickets.TicketSortUpdated, tickets.TicketSortID:
		default:
			t.Fatalf("%q: sort %+v", raw, fl.Sort)
		}
		if fl.Status != nil {
			if _, ok := tickets.ParseStatus(string(*fl.Status)); !ok {
				t.Fatalf("%q: status %q", raw, *fl.Status)
			}
		}
		for _, id := range []*int64{fl.ChannelID, fl.EndUserID, fl.CustomerRepID, fl.TopicID} {
			if id != nil && *id <= 0 {
				t.Fatalf("%q: id %d", raw, *id)
			}
		}
		if fl.CreatedFrom != nil && fl.CreatedBefore != nil && !fl.CreatedBefore.After(*fl.CreatedFrom) {
			t.Fatalf("%q: empty range [%v, %v)", raw, fl.CreatedFrom, fl.CreatedBefore)
		}
		if fl.Q != strings.TrimSpace(fl.Q) || utf8.RuneCountInString(fl.Q) > tickets.MaxSearchLen {
			t.Fatalf("%q: q %q", raw, fl.Q)
		}
		if id := vals.Get("channelId"); id != "" && len(vals["channelId"]) == 1 && strconv.FormatInt(*fl.ChannelID, 10) != id {
			t.Fatalf("%q: channelId read as %d", raw, *fl.ChannelID)
		}
	})
}
