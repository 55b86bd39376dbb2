package graphfake

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DefaultDeltaPageSize is a delta page's size without Prefer: odata.maxpagesize, as Graph's.
const DefaultDeltaPageSize = 10

// maxDeltaPageSize caps odata.maxpagesize.
const maxDeltaPageSize = 1000

// deltaState is what a delta link stands for; Graph encodes the round's query options in its
// links, so the filter and $select travel with it.
type deltaState struct {
	mailbox, folder string
	epoch           int
	since           time.Time // zero: no $filter
	selected        string
	// Messages with after < seq <= upto are in the round; a deltaLink's round (fresh) ends at
	// the changes present when it is used.
	after, upto int64
	fresh       bool
	incremental bool // reports removals; a first round does not
}

func newDeltaToken() string {
	b := make([]byte, 48)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// handleDelta serves GET /users/{mb}/mailFolders/{folder}/messages/delta: a first round with
// $select and $filter=receivedDateTime ge|gt X, pages of Prefer: odata.maxpagesize with
// @odata.nextLink ($skiptoken), and a final @odata.deltaLink ($deltatoken) whose round returns
// what changed since it was issued.
func (s *Server) handleDelta(w http.ResponseWriter, r *http.Request, _ accessToken, mb *mailbox) {
	q := r.URL.Query()
	folder := folderKey(r.PathValue("folder"))
	pageSize := DefaultDeltaPageSize
	if v, ok := preferValues(r)["odata.maxpagesize"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			badRequest("Invalid odata.maxpagesize preference '" + v + "'.").write(w)
			return
		}
		pageSize = min(n, maxDeltaPageSize)
	}
	token := q.Get("$skiptoken")
	if token == "" {
		token = q.Get("$deltatoken")
	}

	s.mu.Lock()
	mb.stats.DeltaCalls++
	var st deltaState
	if token != "" {
		var ok bool
		st, ok = s.mail.tokens[token]
		if !ok || st.epoch != mb.epoch || st.mailbox != strings.ToLower(mb.address) || st.folder != folder {
			s.mu.Unlock()
			writeError(w, http.StatusGone, "syncStateNotFound", "The sync state generation is not found or has expired. Start a new sync without a delta token.")
			return
		}
		if st.fresh {
			st.fresh, st.upto = false, s.mail.seq
		}
	} else {
		if _, e := parseSelect(messageType, q.Get("$select")); e != nil {
			s.mu.Unlock()
			e.write(w)
			return
		}
		since, e := parseDeltaFilter(q.Get("$filter"))
		if e != nil {
			s.mu.Unlock()
			e.write(w)
			return
		}
		st = deltaState{mailbox: strings.ToLower(mb.address), folder: folder, epoch: mb.epoch, since: since,
			selected: q.Get("$select"), upto: s.mail.seq}
	}

	type change struct {
		seq     int64
		m       *mailMessage
		removed string
	}
	var changes []change
	for _, m := range mb.messages {
		if m.folder == folder && m.seq > st.after && m.seq <= st.upto && (st.since.IsZero() || !m.received.Before(st.since)) {
			changes = append(changes, change{seq: m.seq, m: m})
		}
	}
	if st.incremental {
		for _, t := range mb.tombstones {
			if t.folder == folder && t.seq > st.after && t.seq <= st.upto {
				changes = append(changes, change{seq: t.seq, removed: t.id})
			}
		}
	}
	slices.SortFunc(changes, func(a, b change) int { return int(a.seq - b.seq) })

	out := map[string]any{"@odata.context": contextURL(r, "Collection(message)")}
	link := baseURL(r) + "/v1.0/users/" + url.PathEscape(r.PathValue("mb")) + "/mailFolders/" + url.PathEscape(r.PathValue("folder")) + "/messages/delta?"
	next := st
	if len(changes) > pageSize {
		changes = changes[:pageSize]
		next.after = changes[len(changes)-1].seq
		tok := newDeltaToken()
		s.mail.tokens[tok] = next
		out["@odata.nextLink"] = link + "$skiptoken=" + tok
	} else {
		next.after, next.upto, next.fresh, next.incremental = st.upto, 0, true, true
		tok := newDeltaToken()
		s.mail.tokens[tok] = next
		out["@odata.deltaLink"] = link + "$deltatoken=" + tok
	}
	value := make([]map[string]any, 0, len(changes))
	for _, c := range changes {
		if c.m == nil {
			value = append(value, map[string]any{"@odata.type": "#microsoft.graph.message", "id": c.removed,
				"@removed": map[string]string{"reason": "deleted"}})
			continue
		}
		keep, _ := parseSelect(messageType, st.selected) // checked when the round began
		value = append(value, selectFields(c.m.json(false), keep))
	}
	s.mu.Unlock()
	out["value"] = value
	writeJSON(w, http.StatusOK, out)
}

// parseDeltaFilter accepts the one filter Graph's message delta supports: receivedDateTime ge X
// (or gt, which the fake treats alike at its one-second resolution).
func parseDeltaFilter(f string) (time.Time, *apiError) {
	if strings.TrimSpace(f) == "" {
		return time.Time{}, nil
	}
	fields := strings.Fields(f)
	if len(fields) != 3 || !strings.EqualFold(fields[0], "receivedDateTime") ||
		(!strings.EqualFold(fields[1], "ge") && !strings.EqualFold(fields[1], "gt")) {
		return time.Time{}, badRequest("Unsupported $filter '" + f + "': delta supports receivedDateTime ge|gt only.")
	}
	t, err := time.Parse(time.RFC3339Nano, fields[2])
	if err != nil {
		return time.Time{}, badRequest("Invalid date '" + fields[2] + "' in $filter.")
	}
	if strings.EqualFold(fields[1], "gt") {
		t = t.Add(time.Nanosecond)
	}
	return t.UTC(), nil
}
