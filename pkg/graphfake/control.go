package graphfake

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
)

// The control API lets a developer drive a separately running fake with curl; tests call the
// methods directly. Errors are plain JSON {"error": "..."}: this is not Graph speaking.

func (s *Server) handleFakeSubscriptions(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.Subscriptions())
}

func (s *Server) handleFakeCalls(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	calls := make(map[string]int, len(s.calls))
	for k, v := range s.calls {
		calls[k] = v
	}
	tokens := make(map[string]int, len(s.tokenRequests))
	for k, v := range s.tokenRequests {
		tokens[k] = v
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"calls": calls, "tokenRequests": tokens})
}

func (s *Server) handleFakeNotify(w http.ResponseWriter, r *http.Request) {
	n, ok := intParam(w, r, "n", 1)
	if !ok {
		return
	}
	status, err := s.Notify(r.Context(), r.PathValue("id"), n)
	controlResult(w, status, err)
}

func (s *Server) handleFakeLifecycle(w http.ResponseWriter, r *http.Request) {
	event := r.URL.Query().Get("event")
	if event == "" {
		event = LifecycleMissed
	}
	if !validLifecycleEvent(event) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "event must be reauthorizationRequired, subscriptionRemoved or missed"})
		return
	}
	status, err := s.NotifyLifecycle(r.Context(), r.PathValue("id"), event)
	controlResult(w, status, err)
}

func (s *Server) handleFakeExpire(w http.ResponseWriter, r *http.Request) {
	if !s.Expire(r.PathValue("id")) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": ErrNoSubscription.Error()})
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleFakeThrottle(w http.ResponseWriter, r *http.Request) {
	n, ok := intParam(w, r, "n", 1)
	if !ok {
		return
	}
	s.Throttle(n, r.URL.Query().Get("retryAfter"))
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleFakeFail(w http.ResponseWriter, r *http.Request) {
	n, ok := intParam(w, r, "n", 1)
	if !ok {
		return
	}
	status, ok := intParam(w, r, "status", http.StatusServiceUnavailable)
	if !ok {
		return
	}
	if status < 400 || status > 599 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "status must be 4xx or 5xx"})
		return
	}
	s.FailNext(n, status)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleFakeHandshake(w http.ResponseWriter, r *http.Request) {
	modes := map[string]HandshakeMode{"validate": HandshakeValidate, "skip": HandshakeSkip, "fail": HandshakeFail}
	m, ok := modes[r.URL.Query().Get("mode")]
	if !ok {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "mode must be validate, skip or fail"})
		return
	}
	s.SetHandshake(m)
	w.WriteHeader(http.StatusNoContent)
}

func intParam(w http.ResponseWriter, r *http.Request, name string, def int) (int, bool) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": name + " must be a positive integer"})
		return 0, false
	}
	return n, true
}

// controlResult reports the receiver's answer; a delivery failure is the fake's gateway failing.
func controlResult(w http.ResponseWriter, status int, err error) {
	switch {
	case errors.Is(err, ErrNoSubscription):
		writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
	case err != nil:
		writeJSON(w, http.StatusBadGateway, map[string]string{"error": err.Error()})
	default:
		writeJSON(w, http.StatusOK, map[string]int{"receiverStatus": status})
	}
}

// handleFakeMail delivers the JSON DeliverMail in the body (notifications included) and answers
// {"id": ...}; a notification that could not be posted is reported as "notifyError".
func (s *Server) handleFakeMail(w http.ResponseWriter, r *http.Request) {
	var d DeliverMail
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 32<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "body must be a DeliverMail: " + err.Error()})
		return
	}
	id, err := s.Deliver(r.Context(), d)
	switch {
	case id == "":
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
	case err != nil:
		writeJSON(w, http.StatusOK, map[string]string{"id": id, "notifyError": err.Error()})
	default:
		writeJSON(w, http.StatusOK, map[string]string{"id": id})
	}
}

func (s *Server) handleFakeSent(w http.ResponseWriter, _ *http.Request) {
	sent := s.Sent()
	if sent == nil {
		sent = []SentMail{}
	}
	writeJSON(w, http.StatusOK, sent)
}

func (s *Server) handleFakeDeltaExpire(w http.ResponseWriter, r *http.Request) {
	mb := r.URL.Query().Get("mailbox")
	if mb == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "mailbox is required"})
		return
	}
	s.ExpireDeltaTokens(mb)
	w.WriteHeader(http.StatusNoContent)
}

// handleFakeUsers adds a user of the identity platform: {"username", "tenantId", "name",
// "declineSignIn", "declineConsent"}.
func (s *Server) handleFakeUsers(w http.ResponseWriter, r *http.Request) {
	var u User
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 16<<10)).Decode(&u); err != nil || u.Username == "" || !looksLikeGUID(u.TenantID) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "want {\"username\": ..., \"tenantId\": a GUID}"})
		return
	}
	s.AddUser(u)
	w.WriteHeader(http.StatusNoContent)
}
