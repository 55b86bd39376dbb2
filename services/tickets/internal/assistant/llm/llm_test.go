package llm

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/ai/openai"
	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/services/tickets/internal/assistant"
)

var own = assistant.Provenance{Engine: EngineName, Model: chatModel}

var testTopics = []assistant.Topic{
	{TopicID: 11, Name: "Password reset", Description: "Login problems and forgotten passwords",
		Documents: []assistant.Document{{DocumentID: 101, TopicID: 11, Title: "Resetting your password"}}},
	{TopicID: 12, Name: "Invoices", Description: "Billing questions, invoices and refunds",
		Documents: []assistant.Document{{DocumentID: 201, TopicID: 12, Title: "Where to find your invoices"}, {DocumentID: 202, TopicID: 12, Title: "  "}}},
	{TopicID: 13, Name: "Shipping", Description: "Delivery times and tracking"},
}

func TestDetectTopics(t *testing.T) {
	const text = "I forgot my password and cannot log in"
	good := `{"topics":[{"topicID":12,"score":0.2},{"topicID":11,"score":0.91}]}`
	goodScores := []assistant.TopicScore{{TopicID: 11, Score: 0.91}, {TopicID: 12, Score: 0.2}, {TopicID: 13, Score: 0}}
	fallbackScores := []assistant.TopicScore{{TopicID: 11, Score: fallbackScore}, {TopicID: 12, Score: fallbackScore}, {TopicID: 13, Score: fallbackScore}}

	tests := []struct {
		name         string
		cfg          func(*openai.Config)
		steps        []step
		want         []assistant.TopicScore
		wantProv     assistant.Provenance
		wantRequests int
		wantWaits    []time.Duration
		// corrected: the second request asks again after an invalid answer
		// (otherwise later requests are the client's own retries).
		corrected bool
	}{
		{
			name:  "good JSON",
			steps: []step{answer(good)}, want: goodScores, wantProv: own, wantRequests: 1,
		},
		{
			name:  "scores clamped, unknown topics dropped, missing topics zero",
			steps: []step{answer(`{"topics":[{"topicID":11,"score":1.7},{"topicID":13,"score":-0.4},{"topicID":999,"score":1}]}`)},
			want:  []assistant.TopicScore{{TopicID: 11, Score: 1}, {TopicID: 12, Score: 0}, {TopicID: 13, Score: 0}}, wantProv: own, wantRequests: 1,
		},
		{
			name:  "reasoning block and code fence around the JSON",
			steps: []step{answer("<think>The user lost a password.</think>\n```json\n" + good + "\n```")},
			want:  goodScores, wantProv: own, wantRequests: 1,
		},
		{
			name:  "invalid JSON then good",
			steps: []step{answer("Sure! This is about Password reset."), answer(good)},
			want:  goodScores, wantProv: own, wantRequests: 2, corrected: true,
		},
		{
			name:  "invalid twice falls back",
			steps: []step{answer("Topic: 11"), answer(`{"topics":[{"topicID":"11","score":0.9}]}`)},
			want:  fallbackScores, wantProv: offline, wantRequests: 2, corrected: true,
		},
		{
			name: "a topic scored twice, twice, falls back",
			steps: []step{
				answer(`{"topics":[{"topicID":11,"score":0.9},{"topicID":11,"score":0.1}]}`),
				answer(`{"topics":[{"topicID":11,"score":0.9},{"topicID":11,"score":0.1}]}`),
			},
			want: fallbackScores, wantProv: offline, wantRequests: 2, corrected: true,
		},
		{
			name:  "text around the JSON",
			steps: []step{answer("Here are the scores:\n" + good + "\nHope this helps!")},
			want:  goodScores, wantProv: own, wantRequests: 1,
		},
		{
			name:  "a reply starting inside the reasoning block",
			steps: []step{answer("The user lost a password.\n</think>\n\n" + good)},
			want:  goodScores, wantProv: own, wantRequests: 1,
		},
		{
			name:  "429 with Retry-After then good",
			steps: []step{{status: http.StatusTooManyRequests, header: map[string]string{"Retry-After": "3"}}, answer(good)},
			want:  goodScores, wantProv: own, wantRequests: 2, wantWaits: []time.Duration{3 * time.Second},
		},
		{
			name:  "500s fall back after the client's retries",
			steps: []step{{status: 500}, {status: 500}, {status: 500}},
			want:  fallbackScores, wantProv: offline, wantRequests: 3,
		},
		{
			name:  "400 falls back at once",
			steps: []step{{status: 400}},
			want:  fallbackScores, wantProv: offline, wantRequests: 1,
		},
		{
			name:  "timeout falls back",
			cfg:   func(c *openai.Config) { c.Timeout, c.MaxRetries = 100*time.Millisecond, 1 },
			steps: []step{{block: true}, {block: true}},
			want:  fallbackScores, wantProv: offline, wantRequests: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeServer(t).chat(tt.steps...)
			cfg := clientConfig(f)
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			w := &waits{}
			fb := newFallback()
			e := New(Options{Client: newClient(cfg, w), Fallback: fb})

			got, prov, err := e.DetectTopics(context.Background(), text, testTopics)
			if err != nil {
				t.Fatalf("DetectTopics: %v", err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("scores = %v, want %v", got, tt.want)
			}
			if prov != tt.wantProv {
				t.Errorf("provenance = %+v, want %+v", prov, tt.wantProv)
			}
			wantFallback := 0
			if tt.wantProv == offline {
				wantFallback = 1
			}
			if n := fb.count("DetectTopics"); n != wantFallback {
				t.Errorf("fallback called %d times, want %d", n, wantFallback)
			}
			reqs := f.chatRequests()
			if len(reqs) != tt.wantRequests {
				t.Fatalf("server saw %d requests, want %d", len(reqs), tt.wantRequests)
			}
			if tt.wantWaits != nil && !slices.Equal(w.all(), tt.wantWaits) {
				t.Errorf("client waited %v, want %v", w.all(), tt.wantWaits)
			}

			first := reqs[0]
			if len(first.Messages) != 2 || first.Messages[0].Role != "system" || first.Messages[0].Content != topicsSystem || first.Messages[1].Role != "user" {
				t.Fatalf("first request messages = %+v", first.Messages)
			}
			if first.Temperature == nil || *first.Temperature != 0 {
				t.Errorf("temperature = %v, want 0", first.Temperature)
			}
			var data topicsData
			if err := json.Unmarshal([]byte(userData(t, first.Messages[1].Content)), &data); err != nil {
				t.Fatalf("data block is not JSON: %v", err)
			}
			if data.Message != text || len(data.Topics) != 3 || data.Topics[0].TopicID != 11 || data.Topics[1].Description != testTopics[1].Description ||
				!slices.Equal(data.Topics[1].DocumentTitles, []string{"Where to find your invoices"}) {
				t.Errorf("data = %+v", data)
			}
			for _, r := range reqs[1:] {
				// The request after an invalid answer repeats the conversation, the answer and a correction.
				if !tt.corrected {
					if !slices.Equal(r.Messages, first.Messages) {
						t.Errorf("a retry of the client changed the messages: %+v", r.Messages)
					}
					continue
				}
				if len(r.Messages) != 4 || !slices.Equal(r.Messages[:2], first.Messages) ||
					r.Messages[2].Role != "assistant" || r.Messages[2].Content != tt.steps[0].content ||
					r.Messages[3].Role != "user" || !strings.HasPrefix(r.Messages[3].Content, "Your previous answer could not be used: ") {
					t.Errorf("correction request messages = %+v", r.Messages)
				}
			}
		})
	}
}

func TestDetectTopicsNoTopics(t *testing.T) {
	f := newFakeServer(t)
	fb := newFallback()
	got, prov, err := New(Options{Client: newClient(clientConfig(f), &waits{}), Fallback: fb}).DetectTopics(context.Background(), "hello", nil)
	if err != nil || len(got) != 0 || prov != own {
		t.Fatalf("DetectTopics(no topics) = %v, %+v, %v", got, prov, err)
	}
	if len(f.chatRequests()) != 0 || fb.count("DetectTopics") != 0 {
		t.Fatalf("no topics still asked the server (%d) or the fallback (%d)", len(f.chatRequests()), fb.count("DetectTopics"))
	}
}

var replyDocs = []assistant.RankedDocument{
	{Document: assistant.Document{DocumentID: 101, TopicID: 11, Title: "Resetting your password",
		Content: "Open Settings, then Security, and choose Reset password. The link is valid for 24 hours."}, Score: 0.8},
	{Document: assistant.Document{DocumentID: 102, TopicID: 11, Title: "Locked accounts",
		Content: "After five failed logins the account is locked for 30 minutes."}, Score: 0.4},
}

var replyRequest = assistant.ReplyRequest{
	Message:     "No puedo entrar, olvidé mi contraseña.",
	Subject:     "Acceso",
	History:     []assistant.Turn{{SenderType: "EndUser", Text: "Hola"}, {SenderType: "Agent", Text: "¿En qué podemos ayudarle?"}},
	EndUserName: "María Pérez",
	Language:    "es",
	Documents:   replyDocs,
}

func TestPrepareReply(t *testing.T) {
	goodText := "Hola María Pérez: abra Ajustes, luego Seguridad, y elija Restablecer contraseña. El enlace vale 24 horas."
	good := `{"reply":"` + goodText + `","documentIDs":[101,101]}`
	goodReply := assistant.Reply{Text: goodText, Language: "es", DocumentIDs: []int64{101}}
	fallback := assistant.Reply{Text: fallbackReply, Language: "es", DocumentIDs: []int64{101}}

	tests := []struct {
		name         string
		steps        []step
		want         assistant.Reply
		wantProv     assistant.Provenance
		wantRequests int
	}{
		{name: "good JSON", steps: []step{answer(good)}, want: goodReply, wantProv: own, wantRequests: 1},
		{name: "documents do not answer", steps: []step{answer(`{"reply":null}`)}, want: assistant.Reply{}, wantProv: own, wantRequests: 1},
		{name: "null reply with empty documentIDs", steps: []step{answer(`{"reply":null,"documentIDs":[]}`)}, want: assistant.Reply{}, wantProv: own, wantRequests: 1},
		{name: "a document not given, then good", steps: []step{answer(`{"reply":"Hola","documentIDs":[555]}`), answer(good)}, want: goodReply, wantProv: own, wantRequests: 2},
		{name: "no documentIDs twice falls back", steps: []step{answer(`{"reply":"Hola"}`), answer(`{"reply":"Hola","documentIDs":[]}`)}, want: fallback, wantProv: offline, wantRequests: 2},
		{name: "plain text twice falls back", steps: []step{answer(goodText), answer(goodText)}, want: fallback, wantProv: offline, wantRequests: 2},
		{name: "missing reply key then good", steps: []step{answer(`{"documentIDs":[101]}`), answer(good)}, want: goodReply, wantProv: own, wantRequests: 2},
		{name: "unknown field then good", steps: []step{answer(`{"reply":"Hola","documentIDs":[101],"confidence":0.9}`), answer(good)}, want: goodReply, wantProv: own, wantRequests: 2},
		{name: "500s fall back", steps: []step{{status: 502}, {status: 502}, {status: 502}}, want: fallback, wantProv: offline, wantRequests: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeServer(t).chat(tt.steps...)
			fb := newFallback()
			e := New(Options{Client: newClient(clientConfig(f), &waits{}), Fallback: fb})
			got, prov, err := e.PrepareReply(context.Background(), replyRequest)
			if err != nil {
				t.Fatalf("PrepareReply: %v", err)
			}
			if got.Text != tt.want.Text || got.Language != tt.want.Language || !slices.Equal(got.DocumentIDs, tt.want.DocumentIDs) {
				t.Errorf("reply = %+v, want %+v", got, tt.want)
			}
			if prov != tt.wantProv {
				t.Errorf("provenance = %+v, want %+v", prov, tt.wantProv)
			}
			reqs := f.chatRequests()
			if len(reqs) != tt.wantRequests {
				t.Fatalf("server saw %d requests, want %d", len(reqs), tt.wantRequests)
			}
			sys := reqs[0].Messages[0]
			if sys.Role != "system" || !strings.Contains(sys.Content, "Write the reply in Spanish (es)") {
				t.Errorf("system message does not ask for Spanish: %q", sys.Content)
			}
			var data replyData
			if err := json.Unmarshal([]byte(userData(t, reqs[0].Messages[1].Content)), &data); err != nil {
				t.Fatalf("data block is not JSON: %v", err)
			}
			if data.EndUserName != "María Pérez" || data.Message != replyRequest.Message || data.Subject != "Acceso" ||
				len(data.History) != 2 || data.History[1] != (turnData{From: "Agent", Text: "¿En qué podemos ayudarle?"}) ||
				len(data.Documents) != 2 || data.Documents[0] != (documentData{DocumentID: 101, Title: replyDocs[0].Title, Content: replyDocs[0].Content}) {
				t.Errorf("data = %+v", data)
			}
		})
	}
}

func TestPrepareReplyWithoutDocumentsAsksNothing(t *testing.T) {
	f := newFakeServer(t)
	fb := newFallback()
	r := replyRequest
	r.Documents = nil
	got, prov, err := New(Options{Client: newClient(clientConfig(f), &waits{}), Fallback: fb}).PrepareReply(context.Background(), r)
	if err != nil || got.Text != "" || len(got.DocumentIDs) != 0 || prov != own {
		t.Fatalf("PrepareReply(no documents) = %+v, %+v, %v; want Reply{} from %+v", got, prov, err, own)
	}
	if len(f.chatRequests()) != 0 || fb.count("PrepareReply") != 0 {
		t.Fatal("a reply without documents was asked of the model or the fallback")
	}
}

func TestSummarize(t *testing.T) {
	turns := []assistant.Turn{
		{SenderType: "EndUser", Text: "My parcel has not arrived."},
		{SenderType: "Agent", Text: "We asked the carrier."},
	}
	summary := "The customer's parcel has not arrived; the agent asked the carrier. Open: the carrier's answer."
	tests := []struct {
		name         string
		steps        []step
		want         string
		wantProv     assistant.Provenance
		wantRequests int
	}{
		{name: "good", steps: []step{answer(summary + "\n")}, want: summary, wantProv: own, wantRequests: 1},
		{name: "reasoning block removed", steps: []step{answer("<think>short</think>" + summary)}, want: summary, wantProv: own, wantRequests: 1},
		{name: "empty answer falls back", steps: []step{answer("  ")}, want: fallbackSummary, wantProv: offline, wantRequests: 1},
		{name: "500s fall back", steps: []step{{status: 500}, {status: 500}, {status: 500}}, want: fallbackSummary, wantProv: offline, wantRequests: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeServer(t).chat(tt.steps...)
			e := New(Options{Client: newClient(clientConfig(f), &waits{}), Fallback: newFallback()})
			got, prov, err := e.Summarize(context.Background(), "Where is my parcel?", "Open", turns)
			if err != nil || got != tt.want || prov != tt.wantProv {
				t.Fatalf("Summarize = %q, %+v, %v; want %q, %+v", got, prov, err, tt.want, tt.wantProv)
			}
			reqs := f.chatRequests()
			if len(reqs) != tt.wantRequests {
				t.Fatalf("server saw %d requests, want %d", len(reqs), tt.wantRequests)
			}
			if reqs[0].Messages[0].Content != summarySystem {
				t.Errorf("system message = %q", reqs[0].Messages[0].Content)
			}
			var data summaryData
			if err := json.Unmarshal([]byte(userData(t, reqs[0].Messages[1].Content)), &data); err != nil {
				t.Fatalf("data block is not JSON: %v", err)
			}
			if data.Subject != "Where is my parcel?" || data.Status != "Open" || len(data.Conversation) != 2 ||
				data.Conversation[0] != (turnData{From: "EndUser", Text: turns[0].Text}) || data.OmittedTurns != 0 {
				t.Errorf("data = %+v", data)
			}
		})
	}
}

// keywordVectors embeds a text by keyword, so the cosines are known: a
// "password" text is [1 0], an "invoice" text [0 1], an "opposite" text
// [-1 0].
func keywordVectors(inputs []string) [][]float64 {
	out := make([][]float64, len(inputs))
	for i, in := range inputs {
		in = strings.ToLower(in)
		switch {
		case strings.Contains(in, "password"):
			out[i] = []float64{1, 0}
		case strings.Contains(in, "invoice"):
			out[i] = []float64{0, 1}
		case strings.Contains(in, "opposite"):
			out[i] = []float64{-1, 0}
		default:
			out[i] = []float64{0.5, 0.5}
		}
	}
	return out
}

var rankDocs = []assistant.Document{
	{DocumentID: 1, TopicID: 11, Title: "Resetting your password", Content: "Settings, Security, Reset."},
	{DocumentID: 2, TopicID: 12, Title: "Invoices", Content: "Download an invoice from Billing."},
	{DocumentID: 3, TopicID: 13, Title: "Opposite day", Content: "Nothing to see."},
}

type rankedID struct {
	id    int64
	score float64
}

func ranked(rd []assistant.RankedDocument) []rankedID {
	out := make([]rankedID, len(rd))
	for i, d := range rd {
		out[i] = rankedID{d.DocumentID, math.Round(d.Score*1000) / 1000}
	}
	return out
}

func TestRankDocuments(t *testing.T) {
	const text = "I forgot my password"
	// The fallback's BM25 prefers the invoice document, then the opposite one.
	bm25 := map[int64]float64{1: 0.2, 2: 0.9, 3: 0.6}
	fallbackRanking := []rankedID{{2, 0.9}, {3, 0.6}, {1, 0.2}}
	// Averages of similarity (1, 0.5, 0) and BM25.
	combined := []rankedID{{2, 0.7}, {1, 0.6}, {3, 0.3}}
	combinedProv := assistant.Provenance{Engine: EngineName, Model: embeddingModel + "+bm25-v1"}

	tests := []struct {
		name          string
		embeddings    string
		noFallback    bool
		steps         []step
		want          []rankedID
		wantProv      assistant.Provenance
		wantEmbedReqs int
	}{
		{name: "embeddings averaged with BM25", embeddings: embeddingModel, steps: []step{{vectors: keywordVectors}},
			want: combined, wantProv: combinedProv, wantEmbedReqs: 1},
		{name: "no embedding model: the fallback's ranking", want: fallbackRanking, wantProv: offline},
		{name: "429 with Retry-After then embeddings", embeddings: embeddingModel,
			steps: []step{{status: 429, header: map[string]string{"Retry-After": "1"}}, {vectors: keywordVectors}},
			want:  combined, wantProv: combinedProv, wantEmbedReqs: 2},
		{name: "embeddings failing: the fallback's ranking", embeddings: embeddingModel,
			steps: []step{{status: 500}, {status: 500}, {status: 500}}, want: fallbackRanking, wantProv: offline, wantEmbedReqs: 3},
		{name: "malformed embeddings: the fallback's ranking", embeddings: embeddingModel,
			steps: []step{{body: `{"object":"list","data":[{"index":0,"embedding":[1,0]}]}`}}, want: fallbackRanking, wantProv: offline, wantEmbedReqs: 1},
		{name: "no fallback: similarity alone", embeddings: embeddingModel, noFallback: true, steps: []step{{vectors: keywordVectors}},
			want: []rankedID{{1, 1}, {2, 0.5}, {3, 0}}, wantProv: assistant.Provenance{Engine: EngineName, Model: embeddingModel}, wantEmbedReqs: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeServer(t).embed(tt.steps...)
			fb := newFallback()
			fb.rank = bm25
			o := Options{Client: newClient(clientConfig(f), &waits{}), EmbeddingModel: tt.embeddings, Fallback: fb}
			if tt.noFallback {
				o.Fallback = nil
			}
			got, prov, err := New(o).RankDocuments(context.Background(), text, rankDocs)
			if err != nil {
				t.Fatalf("RankDocuments: %v", err)
			}
			if !slices.Equal(ranked(got), tt.want) || prov != tt.wantProv {
				t.Errorf("RankDocuments = %v from %+v, want %v from %+v", ranked(got), prov, tt.want, tt.wantProv)
			}
			reqs := f.embedRequests()
			if len(reqs) != tt.wantEmbedReqs {
				t.Fatalf("server saw %d embeddings requests, want %d", len(reqs), tt.wantEmbedReqs)
			}
			if len(f.chatRequests()) != 0 {
				t.Errorf("ranking made chat requests")
			}
			if len(reqs) > 0 {
				in := reqs[0].Input
				if len(in) != 4 || in[0] != text || in[1] != "Resetting your password\n\nSettings, Security, Reset." {
					t.Errorf("embeddings inputs = %q", in)
				}
			}
			for _, d := range got {
				if d.Title == "" || d.TopicID == 0 {
					t.Errorf("ranked document lost its fields: %+v", d)
				}
			}
		})
	}
}

func TestRankDocumentsFailingWithoutFallback(t *testing.T) {
	f := newFakeServer(t).embed(step{status: 400})
	_, _, err := New(Options{Client: newClient(clientConfig(f), &waits{}), EmbeddingModel: embeddingModel}).
		RankDocuments(context.Background(), "password", rankDocs)
	var ue *openai.UpstreamError
	if !errors.As(err, &ue) || ue.StatusCode != 400 {
		t.Fatalf("error = %v, want the server's 400", err)
	}
}

// An unconfigured or missing client sends nothing and leaves every call to
// the fallback.
func TestNotConfiguredUsesFallback(t *testing.T) {
	f := newFakeServer(t)
	for name, c := range map[string]*openai.Client{
		"nil client":      nil,
		"no model":        openai.New(openai.Config{BaseURL: f.srv.URL + "/v1", APIKey: testKey}),
		"empty configure": openai.New(openai.Config{}),
	} {
		t.Run(name, func(t *testing.T) {
			fb := newFallback()
			fb.rank = map[int64]float64{3: 0.5}
			e := New(Options{Client: c, EmbeddingModel: "", Fallback: fb})
			ctx := context.Background()
			if _, prov, err := e.DetectTopics(ctx, "x", testTopics); err != nil || prov != offline {
				t.Errorf("DetectTopics: %+v, %v", prov, err)
			}
			if got, prov, err := e.RankDocuments(ctx, "x", rankDocs); err != nil || prov != offline || got[0].DocumentID != 3 {
				t.Errorf("RankDocuments: %+v, %+v, %v", got, prov, err)
			}
			if got, prov, err := e.PrepareReply(ctx, replyRequest); err != nil || prov != offline || got.Text != fallbackReply {
				t.Errorf("PrepareReply: %+v, %+v, %v", got, prov, err)
			}
			if got, prov, err := e.Summarize(ctx, "s", "Open", nil); err != nil || prov != offline || got != fallbackSummary {
				t.Errorf("Summarize: %q, %+v, %v", got, prov, err)
			}
			for _, op := range []string{"DetectTopics", "RankDocuments", "PrepareReply", "Summarize"} {
				if fb.count(op) != 1 {
					t.Errorf("fallback %s called %d times, want 1", op, fb.count(op))
				}
			}
		})
	}
	if n := len(f.chatRequests()) + len(f.embedRequests()); n != 0 {
		t.Fatalf("server saw %d requests", n)
	}
}

func TestFailureWithoutFallbackIsUnavailable(t *testing.T) {
	f := newFakeServer(t).chat(step{status: 503}, step{status: 503}, step{status: 503})
	_, _, err := New(Options{Client: newClient(clientConfig(f), &waits{})}).Summarize(context.Background(), "s", "Open", nil)
	if !apperr.Is(err, apperr.Unavailable) {
		t.Fatalf("error = %v, want apperr.Unavailable", err)
	}
	var ue *openai.UpstreamError
	if !errors.As(err, &ue) || ue.StatusCode != 503 {
		t.Fatalf("error = %v does not carry the server's 503", err)
	}
}

// A caller whose context has ended gets the error, not a fallback result.
func TestCallerCancellationIsNotFallenBackFrom(t *testing.T) {
	f := newFakeServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	f.chat(step{block: true})
	fb := newFallback()
	e := New(Options{Client: newClient(clientConfig(f), &waits{}), Fallback: fb})
	done := make(chan error, 1)
	go func() {
		_, _, err := e.DetectTopics(ctx, "hello", testTopics)
		done <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for len(f.chatRequests()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the request never reached the server")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("DetectTopics did not return after cancellation")
	}
	if fb.count("DetectTopics") != 0 {
		t.Fatal("the fallback ran for a cancelled caller")
	}
}
