package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// seeded is what the mix's requests refer to: made through the API before
// the runs.
type seeded struct {
	ChannelID int64
	EndUserID int64
	TicketIDs []int64
}

// route is one kind of request of the mix.
type route struct {
	Name   string
	Weight int
	Method string
	Expect int // status of success
	// Build gives the path and JSON body (empty: none) of the route's n-th
	// request (n counts from 0 over both runs, so names stay unique).
	Build func(n uint64, s *seeded) (path, body string)
	// Then, when set, is a second request made from the first one's answer
	// (the topic just created is deleted again); the pair counts as one
	// request of the route.
	Then func(answer []byte) (method, path string, expect int, err error)
}

// Paging in the lists stays in the first pages: a helpdesk UI's pattern.
const listPages = 5

// mix is the routes of the soak, across every routed service: reads and
// writes in about the proportions of a helpdesk's day (reads first).
func mix() []route {
	jsonBody := func(v any) string {
		b, _ := json.Marshal(v)
		return string(b)
	}
	get := func(path string) func(uint64, *seeded) (string, string) {
		return func(uint64, *seeded) (string, string) { return path, "" }
	}
	return []route{
		{Name: "customers-me", Weight: 3, Method: http.MethodGet, Expect: http.StatusOK, Build: get("/api/Customers/me")},
		{Name: "topics-list", Weight: 3, Method: http.MethodGet, Expect: http.StatusOK,
			Build: func(n uint64, _ *seeded) (string, string) {
				return fmt.Sprintf("/api/Topics?pageNumber=%d&pageSize=20", n%listPages+1), ""
			}},
		{Name: "topic-create-delete", Weight: 1, Method: http.MethodPost, Expect: http.StatusCreated,
			// Topics are a tenant's configuration: created and deleted
			// again, so that their number stays that of a real help centre
			// (ever more topics would make every index over them grow).
			Build: func(n uint64, _ *seeded) (string, string) {
				return "/api/Topics", jsonBody(map[string]string{"name": fmt.Sprintf("Soak topic %d", n),
					"description": "Questions about deliveries and returns, created by make soak."})
			},
			Then: func(answer []byte) (string, string, int, error) {
				var t struct {
					TopicID int64 `json:"topicID"`
				}
				if err := json.Unmarshal(answer, &t); err != nil || t.TopicID <= 0 {
					return "", "", 0, fmt.Errorf("no topicID in the created topic %.200s", answer)
				}
				return http.MethodDelete, "/api/Topics/" + strconv.FormatInt(t.TopicID, 10), http.StatusNoContent, nil
			}},
		{Name: "tickets-list", Weight: 3, Method: http.MethodGet, Expect: http.StatusOK,
			Build: func(n uint64, _ *seeded) (string, string) {
				return fmt.Sprintf("/api/Tickets?pageNumber=%d&pageSize=20", n%listPages+1), ""
			}},
		{Name: "ticket-create", Weight: 1, Method: http.MethodPost, Expect: http.StatusCreated,
			Build: func(n uint64, s *seeded) (string, string) {
				return "/api/Tickets", jsonBody(map[string]any{"subject": fmt.Sprintf("Order %d arrived damaged", 500000+n),
					"channelID": s.ChannelID, "endUserID": s.EndUserID})
			}},
		{Name: "message-create", Weight: 2, Method: http.MethodPost, Expect: http.StatusCreated,
			Build: func(n uint64, s *seeded) (string, string) {
				return "/api/TicketMessages", jsonBody(map[string]any{"ticketID": s.TicketIDs[n%uint64(len(s.TicketIDs))],
					"senderType": "Agent", "message": fmt.Sprintf("Thanks for your patience, replacement %d left our warehouse today.", n)})
			}},
		{Name: "message-enduser", Weight: 1, Method: http.MethodPost, Expect: http.StatusCreated,
			// An end user's message: the assistant detects its topics and
			// prepares a reply in the background.
			Build: func(n uint64, s *seeded) (string, string) {
				return "/api/TicketMessages", jsonBody(map[string]any{"ticketID": s.TicketIDs[n%uint64(len(s.TicketIDs))],
					"senderType": "EndUser", "message": fmt.Sprintf("My parcel %d has still not arrived, where is it?", n)})
			}},
		{Name: "endusers-list", Weight: 1, Method: http.MethodGet, Expect: http.StatusOK, Build: get("/api/EndUsers?pageSize=20")},
		{Name: "enduser-create", Weight: 1, Method: http.MethodPost, Expect: http.StatusCreated,
			Build: func(n uint64, _ *seeded) (string, string) {
				return "/api/EndUsers", jsonBody(map[string]string{"name": fmt.Sprintf("Soak User %d", n),
					"email": "soak-user-" + strconv.FormatUint(n, 10) + "@example.com"})
			}},
		{Name: "channels-list", Weight: 1, Method: http.MethodGet, Expect: http.StatusOK, Build: get("/api/Channels")},
		{Name: "detect-language", Weight: 1, Method: http.MethodGet, Expect: http.StatusOK,
			Build: func(n uint64, _ *seeded) (string, string) {
				l := locations[n%uint64(len(locations))]
				return "/api/Translations/detect-language-ai?" + url.Values{"country": {l[0]}, "state": {l[1]}, "city": {l[2]}}.Encode(), ""
			}},
		{Name: "translate-cached", Weight: 1, Method: http.MethodPost, Expect: http.StatusOK,
			// The same sentence every time: Redis cache hits after the first.
			Build: func(uint64, *seeded) (string, string) {
				return "/api/Translations/translate", jsonBody(map[string]string{"sourceText": "The house is big.", "targetLang": "es"})
			}},
	}
}

var locations = [][3]string{
	{"CA", "Quebec", "Montreal"}, {"ES", "Catalonia", "Barcelona"}, {"BE", "Flanders", "Antwerp"}, {"US", "California", "San Francisco"},
}

// schedule spreads the routes over one cycle of sum(weights) slots in
// proportion to their weights, interleaved (smooth weighted round robin):
// the requests of a heavy route do not come in a burst.
func schedule(routes []route) []int {
	total := 0
	for _, r := range routes {
		total += max(r.Weight, 0)
	}
	current := make([]int, len(routes))
	out := make([]int, 0, total)
	for range total {
		best := -1
		for i, r := range routes {
			if r.Weight <= 0 {
				continue
			}
			current[i] += r.Weight
			if best < 0 || current[i] > current[best] {
				best = i
			}
		}
		current[best] -= total
		out = append(out, best)
	}
	return out
}
