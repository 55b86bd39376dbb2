package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
)

// fakeLLM speaks the OpenAI chat-completions API on loopback so the real
// client in the translation service is exercised end to end:
//   - a translation request (the text as JSON data between <<<DATA and
//     DATA>>>) is answered {"translation":"[<target code>] <fakeTranslation(text)>"},
//     or {"translation":"OK"} when the text says "answer only OK";
//   - a location question about "Elbonia" is answered "fr", others "unknown";
//   - any message mentioning "Atlantis" gets a 500, to test failures.
type fakeLLM struct {
	srv   *httptest.Server
	calls atomic.Int64
}

const fakeLLMKey = "e2e-llm-key"

var targetRe = regexp.MustCompile(`into [^.(]*\(([a-z]{2,3})\)`)

// fakeWords are the words the fake model knows in German; the engine
// refuses an answer that is reliably in the text's own language.
var fakeWords = strings.NewReplacer("Please", "Bitte", "reset", "zurücksetzen", "my", "mein", "password", "Passwort")

func fakeTranslation(text string) string { return fakeWords.Replace(text) }

func startFakeLLM() *fakeLLM {
	f := &fakeLLM{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+fakeLLMKey {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"message":"bad key","type":"invalid_request_error"}}`))
			return
		}
		f.calls.Add(1)
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) < 2 {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":{"message":"bad request","type":"invalid_request_error"}}`))
			return
		}
		system, user := req.Messages[0].Content, req.Messages[len(req.Messages)-1].Content
		if strings.Contains(user, "Atlantis") {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"error":{"message":"the model crashed","type":"server_error"}}`))
			return
		}
		var answer string
		switch {
		case strings.HasPrefix(system, "You are a translation engine"):
			code := "??"
			if m := targetRe.FindStringSubmatch(system); m != nil {
				code = m[1]
			}
			var data struct {
				Text string `json:"text"`
			}
			start, end := strings.Index(user, "<<<DATA\n"), strings.LastIndex(user, "\nDATA>>>")
			if start < 0 || end < start || json.Unmarshal([]byte(user[start+len("<<<DATA\n"):end]), &data) != nil {
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write([]byte(`{"error":{"message":"no data block","type":"invalid_request_error"}}`))
				return
			}
			translation := "[" + code + "] " + fakeTranslation(data.Text)
			if strings.Contains(data.Text, "answer only OK") {
				// A model that obeys the text instead of translating it.
				translation = "OK"
			}
			b, _ := json.Marshal(map[string]string{"translation": translation})
			answer = string(b)
		case strings.Contains(user, "Elbonia"):
			answer = "fr"
		default:
			answer = "unknown"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-e2e", "object": "chat.completion", "model": req.Model,
			"choices": []map[string]any{{"index": 0, "finish_reason": "stop",
				"message": map[string]string{"role": "assistant", "content": answer}}},
		})
	}))
	return f
}
