package graphfake

import (
	"net/http"
	"strings"
)

func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /{tenant}/oauth2/v2.0/token", s.handleToken)
	mux.HandleFunc("GET /{tenant}/oauth2/v2.0/authorize", s.handleAuthorize)
	mux.HandleFunc("POST /{tenant}/oauth2/v2.0/authorize", s.handleAuthorize)
	mux.HandleFunc("GET /{tenant}/v2.0/adminconsent", s.handleAdminConsent)
	mux.HandleFunc("POST /{tenant}/v2.0/adminconsent", s.handleAdminConsent)
	mux.HandleFunc("GET /discovery/v2.0/keys", s.handleKeys)
	mux.HandleFunc("GET /{tenant}/discovery/v2.0/keys", s.handleKeys)
	mux.HandleFunc("POST /_fake/identity/users", s.handleFakeUsers)

	mux.HandleFunc("POST /v1.0/subscriptions", s.api(s.handleCreate))
	mux.HandleFunc("GET /v1.0/subscriptions", s.api(s.handleList))
	mux.HandleFunc("GET /v1.0/subscriptions/{id}", s.api(s.handleGet))
	mux.HandleFunc("PATCH /v1.0/subscriptions/{id}", s.api(s.handleRenew))
	mux.HandleFunc("DELETE /v1.0/subscriptions/{id}", s.api(s.handleDelete))

	mux.HandleFunc("GET /v1.0/users/{user}", s.api(s.handleUser))
	mux.HandleFunc("GET /v1.0/users", s.api(s.handleUsers))
	mux.HandleFunc("GET /v1.0/users/{mb}/mailFolders/{folder}/messages/delta", s.mailAPI(s.handleDelta))
	mux.HandleFunc("GET /v1.0/users/{mb}/messages/{id}", s.mailAPI(s.handleMessage))
	mux.HandleFunc("GET /v1.0/users/{mb}/mailFolders/{folder}/messages/{id}", s.mailAPI(s.handleMessage))
	mux.HandleFunc("GET /v1.0/users/{mb}/messages/{id}/$value", s.mailAPI(s.handleMessageMIME))
	mux.HandleFunc("GET /v1.0/users/{mb}/messages/{id}/attachments", s.mailAPI(s.handleAttachments))
	mux.HandleFunc("GET /v1.0/users/{mb}/messages/{id}/attachments/{aid}/$value", s.mailAPI(s.handleAttachmentValue))
	mux.HandleFunc("POST /v1.0/users/{mb}/messages/{id}/reply", s.mailAPI(s.handleReply))
	mux.HandleFunc("POST /v1.0/users/{mb}/sendMail", s.mailAPI(s.handleSendMail))

	mux.HandleFunc("GET /_fake/subscriptions", s.handleFakeSubscriptions)
	mux.HandleFunc("GET /_fake/calls", s.handleFakeCalls)
	mux.HandleFunc("POST /_fake/notify/{id}", s.handleFakeNotify)
	mux.HandleFunc("POST /_fake/lifecycle/{id}", s.handleFakeLifecycle)
	mux.HandleFunc("POST /_fake/expire/{id}", s.handleFakeExpire)
	mux.HandleFunc("POST /_fake/throttle", s.handleFakeThrottle)
	mux.HandleFunc("POST /_fake/fail", s.handleFakeFail)
	mux.HandleFunc("POST /_fake/handshake", s.handleFakeHandshake)
	mux.HandleFunc("POST /_fake/createdelay", s.handleFakeCreateDelay)
	mux.HandleFunc("POST /_fake/mail", s.handleFakeMail)
	mux.HandleFunc("GET /_fake/sent", s.handleFakeSent)
	mux.HandleFunc("POST /_fake/deltaexpire", s.handleFakeDeltaExpire)

	mux.HandleFunc("/", s.handleUnknown)
	return mux
}

// handleUnknown answers what Graph would for a path or method it does not serve, so that a client
// calling the wrong URL sees a Graph error rather than the mux's plain text.
func (s *Server) handleUnknown(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/v1.0/") {
		setRequestID(w, r)
		writeError(w, http.StatusBadRequest, "BadRequest",
			"Unsupported request: "+r.Method+" "+r.URL.Path+".")
		return
	}
	http.NotFound(w, r)
}

// api wraps an endpoint in what every Graph call goes through: counting, the bearer
// token and injected faults, in that order (Graph throttles authenticated callers).
func (s *Server) api(h func(http.ResponseWriter, *http.Request, accessToken)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.calls[r.Method]++
		s.mu.Unlock()
		setRequestID(w, r)
		tok, ok := s.authorize(w, r)
		if !ok {
			return
		}
		if f, ok := s.takeFault(); ok {
			writeFault(w, f)
			return
		}
		h(w, r, tok)
	}
}
