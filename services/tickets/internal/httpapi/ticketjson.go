package httpapi

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"

	"supportplatform.dev/pkg/httpserver"
)

// The ticket list's JSON, written by hand: the bytes encoding/json writes
// for ticketPage (TestTicketPageJSON compares them), without its
// reflection and without compacting each date and customFieldsData again
// (about a tenth of the service's CPU per list request, make bench
// tickets-list).

// appendTicketPage appends out as encoding/json would.
func appendTicketPage(b []byte, out ticketPage) ([]byte, error) {
	b = append(b, `{"items":[`...)
	for i, t := range out.Items {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendTicket(b, t); err != nil {
			return nil, err
		}
	}
	b = append(b, `],"totalCount":`...)
	b = strconv.AppendInt(b, int64(out.TotalCount), 10)
	b = append(b, `,"totalPages":`...)
	b = strconv.AppendInt(b, int64(out.TotalPages), 10)
	b = append(b, `,"nextCursor":`...)
	if out.NextCursor == nil {
		b = append(b, "null"...)
	} else {
		b = httpserver.AppendJSONString(b, *out.NextCursor)
	}
	return append(b, '}'), nil
}

func appendTicket(b []byte, t ticketResponse) ([]byte, error) {
	b = append(b, `{"ticketID":`...)
	b = strconv.AppendInt(b, t.TicketID, 10)
	b = append(b, `,"dateCreated":`...)
	b = appendJSONTime(b, t.DateCreated)
	b = append(b, `,"dateUpdated":`...)
	b = appendJSONTime(b, t.DateUpdated)
	b = append(b, `,"status":`...)
	b = httpserver.AppendJSONString(b, t.Status)
	b = append(b, `,"subject":`...)
	b = httpserver.AppendJSONString(b, t.Subject)
	b = append(b, `,"channelID":`...)
	b = strconv.AppendInt(b, t.ChannelID, 10)
	b = append(b, `,"endUserID":`...)
	b = strconv.AppendInt(b, t.EndUserID, 10)
	b = append(b, `,"customerRepID":`...)
	if t.CustomerRepID == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, *t.CustomerRepID, 10)
	}
	b = append(b, `,"isClosed":`...)
	b = strconv.AppendBool(b, t.IsClosed)
	b = append(b, `,"topics":`...)
	if t.Topics == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, s := range t.Topics {
			if i > 0 {
				b = append(b, ',')
			}
			b = httpserver.AppendJSONString(b, s)
		}
		b = append(b, ']')
	}
	b = append(b, `,"aiFeedbackComments":`...)
	if t.AIFeedbackComments == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, f := range t.AIFeedbackComments {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"messageID":`...)
			b = strconv.AppendInt(b, f.MessageID, 10)
			b = append(b, `,"comment":`...)
			b = httpserver.AppendJSONString(b, f.Comment)
			b = append(b, `,"email":`...)
			b = httpserver.AppendJSONString(b, f.Email)
			b = append(b, `,"dateCreated":`...)
			b = appendJSONTime(b, f.DateCreated)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"customFieldsData":`...)
	switch raw := t.CustomFieldsData; {
	case raw == nil:
		b = append(b, "null"...)
	case string(raw) == "{}":
		b = append(b, "{}"...)
	default:
		// As json.RawMessage marshals: compacted, HTML characters escaped.
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return nil, err
		}
		var esc bytes.Buffer
		json.HTMLEscape(&esc, buf.Bytes())
		b = append(b, esc.Bytes()...)
	}
	b = append(b, `,"ticketToken":`...)
	b = httpserver.AppendJSONString(b, t.TicketToken)
	return append(b, '}'), nil
}

// appendJSONTime is time.Time's MarshalJSON (RFC 3339 with nanoseconds,
// trailing zeros dropped).
func appendJSONTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}
