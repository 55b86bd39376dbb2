package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/pkg/servicetest"
)

// SIGTERM while translations wait on the LLM (a local server speaking the
// chat-completions API that holds every request until released): each one is
// answered 200 with its translation, run returns nil, nothing is logged at
// error level. Translation serves no RPC; the customer lookup it makes is
// answered by the test.
func TestShutdownFinishesInFlightCalls(t *testing.T) {
	hold := make(chan struct{})
	var once sync.Once
	llm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-hold
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "x", "object": "chat.completion", "model": "m",
			"choices": []map[string]any{{"index": 0, "finish_reason": "stop",
				"message": map[string]string{"role": "assistant", "content": `{"translation":"Hola"}`}}},
		})
	}))
	t.Cleanup(func() { once.Do(func() { close(hold) }); llm.Close() })
	servicetest.ShutdownTest(t, servicetest.ShutdownCase{
		Name: "translation",
		Run:  run,
		Options: servicetest.Options{NoDatabase: true, Env: map[string]string{
			"TRANSLATION_PROVIDERS": "openai",
			"AI_BASE_URL":           llm.URL + "/v1",
			"AI_MODEL":              "m",
			"AI_MAX_RETRIES":        "0",
		}},
		Block: func(*testing.T) func() { return func() { once.Do(func() { close(hold) }) } },
		Serve: func(c *servicetest.RPCClient) error {
			_, err := natsbus.Serve(c.Bus, contracts.RPCCustomerExists, contracts.QueueAuth,
				func(context.Context, contracts.CustomerExistsRequest) (contracts.CustomerExistsReply, error) {
					return contracts.CustomerExistsReply{Exists: true}, nil
				})
			return err
		},
		HTTP: func(svc *servicetest.Service) servicetest.Call {
			return servicetest.Call{Method: "POST", Path: "/api/Translations/translate",
				Body: `{"sourceText":"Hello","targetLang":"es"}`, Token: svc.Token(t, 77, authn.RoleAgent), Want: 200}
		},
	})
}
