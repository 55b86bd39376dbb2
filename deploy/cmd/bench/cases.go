package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"supportplatform.dev/deploy/loadgen"
	"supportplatform.dev/deploy/stack"
)

// benchCase is one measured request. New endpoints are new entries of
// benchCases.
type benchCase struct {
	Name   string
	Method string
	Path   string
	Body   string // JSON, sent with Content-Type application/json
	Auth   bool   // send the case's account's bearer token
	// Customer, when set, runs the case as an admin of a customer of its
	// own (bootstrapped on first use; cases naming the same customer share
	// it), so that what other cases add to the demo customer (tickets,
	// topics) cannot change what this one counts, in any order.
	Customer string
	Expect   int // status of a successful response (default 200)
	// Services the case needs; it is skipped when one was not built.
	Needs []string

	// Vary, when set, gives the path and body of the case's n-th request
	// (n counts from 0 over the preflight, the warm-up and the window)
	// instead of Path and Body, so that a case is not one cached query.
	Vary func(n uint64) (path, body string)
	// Check, when set, validates the body of every response that has the
	// expected status; a failure counts as an error like a bad status, so
	// that a 200 with a wrong answer cannot pass for a fast one.
	Check func(req *http.Request, reqBody, respBody []byte) error
	// Samples is how many requests the preflight sends (default 1): one
	// per variant for cases whose variants answer differently.
	Samples int
	// Setup runs once before the case (its preflight and measurement) and
	// returns a line for the output; an error fails the case.
	Setup func(ctx context.Context, e *benchEnv) (string, error)
	// Slow cases run with -uncached-c workers instead of -c.
	Slow bool
	// RelativeTo names a case this one is also compared with; selecting
	// this case with -cases measures that one too.
	RelativeTo string
	// Note is printed before the case's figures.
	Note string
	// Named cases run only when -cases names them (make bench-scale's
	// tickets-scale seeds millions of rows).
	Named bool
	// Direct, when set, is the measured operation instead of an HTTP
	// request (a baseline such as a raw database INSERT).
	Direct func(ctx context.Context, e *benchEnv) error
	// After, when set, runs after the case's measurement and returns a line
	// for the output (figures such as memory that the load left behind).
	After func(ctx context.Context, e *benchEnv) (string, error)
	// Latency, when set, makes the case an experiment instead of a load
	// run: it runs once after Setup and returns the lines it measured
	// (figures such as end-to-end latencies that no request/response
	// timing can see).
	Latency func(ctx context.Context, e *benchEnv) ([]string, error)

	counter atomic.Uint64
}

// benchEnv is what setups and request builders need of the running stack.
type benchEnv struct {
	// API sends requests to the gateway, logged in as the demo admin.
	API *loadgen.Client
	// Graph is the fake Microsoft Graph the mail services use.
	Graph *stack.FakeGraph
	// MetricsURL is each service's own /metrics (not through the gateway).
	MetricsURL map[string]string
	// DB is the stack's database as its administrator (seeding, baselines).
	DB *pgxpool.Pool
	// Stack is the running stack (replicas of a worker).
	Stack *stack.Stack
}

const baselineCase = "static"

// Topics created for topics-list, listed topicsPageSize at a time.
const (
	benchTopics    = 1000
	topicsPageSize = 20
	topicsPages    = benchTopics / topicsPageSize
	setupWorkers   = 16
)

// cachedSentence is always the same text: after the first request its
// translation comes from the Redis cache.
const cachedSentence = "The house is big."

// Word lists of the uncached sentences: every request gets a sentence no
// earlier request had (see uncachedSentence), English enough for the
// service's language detection and known to Apertium's eng-spa pair.
var (
	sentenceAdjectives = []string{"small", "big", "red", "old", "new", "green", "white", "black", "happy", "young"}
	sentenceNouns      = []string{"dog", "cat", "house", "car", "teacher", "book", "river", "city", "child", "letter"}
	sentenceVerbs      = []string{"sees", "finds", "likes", "buys", "opens", "wants", "needs", "visits", "sells", "paints"}
	sentenceTimes      = []string{"today", "tomorrow", "now", "again", "slowly"}
)

// uncachedSentence is the n-th sentence, distinct for every n below
// 10*10*10*10*10*5 = 500,000 (the counter's digits in mixed radix pick the
// words); beyond that the counter is appended.
func uncachedSentence(n uint64) string {
	k := n
	pick := func(words []string) string {
		w := words[k%uint64(len(words))]
		k /= uint64(len(words))
		return w
	}
	adj1, noun1, verb := pick(sentenceAdjectives), pick(sentenceNouns), pick(sentenceVerbs)
	adj2, noun2, when := pick(sentenceAdjectives), pick(sentenceNouns), pick(sentenceTimes)
	s := fmt.Sprintf("The %s %s %s the %s %s %s.", adj1, noun1, verb, adj2, noun2, when)
	if k > 0 {
		s += " " + strconv.FormatUint(k, 10)
	}
	return s
}

// detectLocations are the detect-language-ai variants with the answer the
// service's tables give for each.
var detectLocations = []struct{ Country, State, City, Lang string }{
	{"CA", "Quebec", "Montreal", "fr"},
	{"ES", "Catalonia", "Barcelona", "ca"},
	{"BE", "Flanders", "Antwerp", "nl"},
	{"CH", "Ticino", "Lugano", "it"},
	{"CH", "Geneva", "Geneva", "fr"},
	{"US", "California", "San Francisco", "en"},
	{"DE", "Bavaria", "Munich", "de"},
	{"CA", "Ontario", "Toronto", "en"},
}

// benchCases returns every case, in measurement order: the baseline first,
// the slow uncached translation last.
func benchCases() []*benchCase {
	var cachedAnswer atomic.Pointer[[]byte]
	cases := []*benchCase{
		{Name: baselineCase, Method: http.MethodGet, Path: "/bench/static"},
		// Before any load: the services as they start.
		idleRSSCase(),
		{Name: "customers-me", Method: http.MethodGet, Path: "/api/Customers/me", Auth: true, Needs: []string{"auth"}},
		{
			Name: "topics-list", Method: http.MethodGet, Auth: true, Needs: []string{"auth", "topics"}, Customer: "Bench Topics",
			Vary: func(n uint64) (string, string) {
				return fmt.Sprintf("/api/Topics?pageNumber=%d&pageSize=%d", n%topicsPages+1, topicsPageSize), ""
			},
			Check:      checkTopicsPage,
			Setup:      createTopics,
			RelativeTo: "customers-me",
			Note:       fmt.Sprintf("pages 1..%d of %d, %d topics of the bench customer", topicsPages, topicsPageSize, benchTopics),
		},
		{
			Name: "detect-language", Method: http.MethodGet, Auth: true, Needs: []string{"auth", "translation"},
			Vary: func(n uint64) (string, string) {
				l := detectLocations[n%uint64(len(detectLocations))]
				q := url.Values{"country": {l.Country}, "state": {l.State}, "city": {l.City}}
				return "/api/Translations/detect-language-ai?" + q.Encode(), ""
			},
			Check:   checkDetectedLanguage,
			Samples: len(detectLocations),
			Note:    fmt.Sprintf("%d locations in turn (Quebec, Catalonia, Flanders, Ticino, ...)", len(detectLocations)),
		},
		{
			Name: "translate-cached", Method: http.MethodPost, Path: "/api/Translations/translate", Auth: true,
			Needs: []string{"auth", "translation"},
			Body:  translateBody(cachedSentence),
			Check: func(req *http.Request, reqBody, respBody []byte) error {
				if err := checkTranslation(req, reqBody, respBody); err != nil {
					return err
				}
				// Every answer is the first one (the one cached).
				if cachedAnswer.CompareAndSwap(nil, &respBody) {
					return nil
				}
				if first := *cachedAnswer.Load(); !bytes.Equal(first, respBody) {
					return fmt.Errorf("translation %s differs from the first answer %s", respBody, first)
				}
				return nil
			},
			Note: fmt.Sprintf("%q to es every time: Redis cache hits after the preflight", cachedSentence),
		},
		mailNotifyCase(),
		mailToTicketCase(),
		liveFanoutCase(),
		messageToReplyCase(),
		assistantEvalCase(),
	}
	cases = append(cases, ticketCases()...)
	cases = append(cases, scaleCase())
	cases = append(cases, apertiumCases()...)
	return append(cases, &benchCase{
		Name: "translate-uncached", Method: http.MethodPost, Path: "/api/Translations/translate", Auth: true,
		Needs: []string{"auth", "translation"},
		Vary: func(n uint64) (string, string) {
			return "/api/Translations/translate", translateBody(sentence20(n))
		},
		Check: checkTranslation,
		Slow:  true,
		After: serviceRSS,
		Note: "a new 20-word English sentence per request, to es, through the service's warm Apertium pipelines " +
			"(APERTIUM_WARM=true, at most APERTIUM_MAX_PROCESSES=2); apertium-oneshot/apertium-warm compare the engine's two paths",
	})
}

func translateBody(text string) string {
	b, _ := json.Marshal(map[string]string{"sourceText": text, "targetLang": "es"})
	return string(b)
}

// checkTopicsPage makes sure a page holds topicsPageSize topics out of
// benchTopics. Byte counts rather than decoding keep the load generator's
// share of the CPU close to the other cases'.
func checkTopicsPage(_ *http.Request, _, body []byte) error {
	if n := bytes.Count(body, []byte(`"topicID":`)); n != topicsPageSize {
		return fmt.Errorf("page with %d topics, want %d: %.200s", n, topicsPageSize, body)
	}
	if !bytes.Contains(body, []byte(`"totalCount":`+strconv.Itoa(benchTopics)+`,`)) {
		return fmt.Errorf("totalCount is not %d: %.200s", benchTopics, body)
	}
	return nil
}

func checkDetectedLanguage(req *http.Request, _, body []byte) error {
	q := req.URL.Query()
	for _, l := range detectLocations {
		if l.Country == q.Get("country") && l.State == q.Get("state") && l.City == q.Get("city") {
			if want := `"` + l.Lang + `"`; string(body) != want {
				return fmt.Errorf("%s/%s/%s: got %s, want %s", l.Country, l.State, l.City, body, want)
			}
			return nil
		}
	}
	return fmt.Errorf("request for an unknown location %s", req.URL.RawQuery)
}

// checkTranslation wants a JSON string that is not the source text (a text
// "detected" as Spanish comes back unchanged, and fast) and holds no
// untranslated English article.
func checkTranslation(_ *http.Request, reqBody, respBody []byte) error {
	var in struct{ SourceText string }
	if err := json.Unmarshal(reqBody, &in); err != nil {
		return fmt.Errorf("request body: %w", err)
	}
	var out string
	if err := json.Unmarshal(respBody, &out); err != nil {
		return fmt.Errorf("answer is not a JSON string: %.200s", respBody)
	}
	switch low := " " + strings.ToLower(out) + " "; {
	case strings.TrimSpace(out) == "":
		return errors.New("empty translation")
	case out == in.SourceText:
		return fmt.Errorf("%q came back untranslated", in.SourceText)
	case strings.Contains(low, " the "):
		return fmt.Errorf("%q: translation %q still holds English", in.SourceText, out)
	}
	return nil
}

// createTopics creates benchTopics topics for the bench customer through
// the API, setupWorkers at a time, and checks the total the list reports.
func createTopics(ctx context.Context, e *benchEnv) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	start := time.Now()
	var next atomic.Int64
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range setupWorkers {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > benchTopics || ctx.Err() != nil {
					return
				}
				body, _ := json.Marshal(map[string]string{
					"name":        fmt.Sprintf("Bench topic %04d", i),
					"description": fmt.Sprintf("Questions about area %d of the product, created by make bench.", i),
				})
				if _, err := e.API.Do(ctx, http.MethodPost, "/api/Topics", string(body), http.StatusCreated); err != nil {
					mu.Lock()
					errs = append(errs, err)
					if len(errs) >= 5 {
						cancel() // the endpoint is broken: stop early
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if len(errs) > 0 {
		return "", fmt.Errorf("creating %d topics: %d failed, first: %w", benchTopics, len(errs), errs[0])
	}
	data, err := e.API.Do(ctx, http.MethodGet, "/api/Topics?pageNumber=1&pageSize=1", "", http.StatusOK)
	if err != nil {
		return "", err
	}
	var page struct{ TotalCount int }
	if err := json.Unmarshal(data, &page); err != nil || page.TotalCount != benchTopics {
		return "", fmt.Errorf("after creating %d topics the list reports %s", benchTopics, data)
	}
	return fmt.Sprintf("created %d topics in %s (%.0f/s, %d concurrent POST /api/Topics)",
		benchTopics, elapsed.Round(time.Millisecond), benchTopics/elapsed.Seconds(), setupWorkers), nil
}

// request builds the case's requests, numbering them with its counter.
func (c *benchCase) request(e *benchEnv) func(context.Context) (*http.Request, error) {
	return func(ctx context.Context) (*http.Request, error) {
		path, body := c.Path, c.Body
		if c.Vary != nil {
			path, body = c.Vary(c.counter.Add(1) - 1)
		}
		req, err := e.API.NewRequest(ctx, c.Method, path, body)
		if err == nil && c.Auth {
			e.API.Authorize(req)
		}
		return req, err
	}
}

func (c *benchCase) expect() int {
	if c.Expect == 0 {
		return http.StatusOK
	}
	return c.Expect
}

// client is base, or for a case with a Check, a copy whose transport
// checks every response.
func (c *benchCase) client(base *http.Client, workers int) *http.Client {
	if c.Check == nil {
		return base
	}
	tr, ok := base.Transport.(*http.Transport)
	if !ok {
		tr = http.DefaultTransport.(*http.Transport)
	}
	tr = tr.Clone()
	// loadgen sizes the idle pool of an *http.Transport only; this one is
	// wrapped, so one kept-alive connection per worker is set here.
	tr.MaxIdleConnsPerHost = max(tr.MaxIdleConnsPerHost, workers)
	if tr.MaxIdleConns != 0 {
		tr.MaxIdleConns = max(tr.MaxIdleConns, workers)
	}
	cc := *base
	cc.Transport = &checkingTransport{base: tr, expect: c.expect(), check: c.Check}
	return &cc
}

// checkingTransport reads each response with the expected status and runs
// check on it; a failed check is the request's error.
type checkingTransport struct {
	base   http.RoundTripper
	expect int
	check  func(req *http.Request, reqBody, respBody []byte) error
}

func (t *checkingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.GetBody != nil {
		rc, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		reqBody, err = io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, err
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.StatusCode != t.expect {
		return resp, err // the caller reports the status
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if err := t.check(req, reqBody, body); err != nil {
		return nil, fmt.Errorf("%s %s: wrong answer: %w", req.Method, req.URL.Path, err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// preflight sends the case's first Samples requests one by one and fails
// on any unexpected status or answer; it returns the first exchange for
// the output.
func (c *benchCase) preflight(ctx context.Context, e *benchEnv, client *http.Client) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	newReq := c.request(e)
	var first string
	for i := range max(c.Samples, 1) {
		req, err := newReq(ctx)
		if err != nil {
			return "", err
		}
		var reqBody []byte
		if req.GetBody != nil {
			rc, _ := req.GetBody()
			reqBody, _ = io.ReadAll(rc)
			rc.Close()
		}
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return "", err
		}
		if resp.StatusCode != c.expect() {
			return "", fmt.Errorf("%s %s: %s, want %d: %.300s", req.Method, req.URL.RequestURI(), resp.Status, c.expect(), body)
		}
		if i == 0 {
			first = fmt.Sprintf("%s %s", req.Method, req.URL.RequestURI())
			if len(reqBody) > 0 {
				first += " " + string(reqBody)
			}
			first += fmt.Sprintf(" -> %d %s (%s)", resp.StatusCode, abbreviate(body, 90), time.Since(start).Round(100*time.Microsecond))
		}
	}
	if n := max(c.Samples, 1); n > 1 {
		first += fmt.Sprintf(", and %d more ok", n-1)
	}
	return first, nil
}

func abbreviate(b []byte, n int) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
