package graphfake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// maxClientState is Graph's limit on clientState, in characters.
const maxClientState = 128

// maxRequestBody bounds a request body; a subscription is a few hundred bytes.
const maxRequestBody = 1 << 20

// subscriptionBody is what a client may send. Unknown properties are refused, as Graph refuses
// properties its model does not have.
type subscriptionBody struct {
	ODataType                 string  `json:"@odata.type"`
	ChangeType                string  `json:"changeType"`
	NotificationURL           string  `json:"notificationUrl"`
	LifecycleNotificationURL  string  `json:"lifecycleNotificationUrl"`
	Resource                  string  `json:"resource"`
	ExpirationDateTime        string  `json:"expirationDateTime"`
	ClientState               string  `json:"clientState"`
	LatestSupportedTLSVersion string  `json:"latestSupportedTlsVersion"`
	IncludeResourceData       bool    `json:"includeResourceData"`
	EncryptionCertificate     *string `json:"encryptionCertificate"`
	EncryptionCertificateID   *string `json:"encryptionCertificateId"`
	NotificationQueryOptions  *string `json:"notificationQueryOptions"`
	NotificationURLAppID      *string `json:"notificationUrlAppId"`
	NotificationContentType   *string `json:"notificationContentType"`
}

// subscriptionJSON is Graph's subscription resource as it answers it.
type subscriptionJSON struct {
	ODataContext              string  `json:"@odata.context,omitempty"`
	ID                        string  `json:"id"`
	Resource                  string  `json:"resource"`
	ApplicationID             string  `json:"applicationId"`
	ChangeType                string  `json:"changeType"`
	ClientState               *string `json:"clientState"`
	NotificationURL           string  `json:"notificationUrl"`
	NotificationQueryOptions  *string `json:"notificationQueryOptions"`
	LifecycleNotificationURL  *string `json:"lifecycleNotificationUrl"`
	ExpirationDateTime        string  `json:"expirationDateTime"`
	CreatorID                 string  `json:"creatorId"`
	IncludeResourceData       bool    `json:"includeResourceData"`
	LatestSupportedTLSVersion string  `json:"latestSupportedTlsVersion"`
	EncryptionCertificate     *string `json:"encryptionCertificate"`
	EncryptionCertificateID   *string `json:"encryptionCertificateId"`
	NotificationURLAppID      *string `json:"notificationUrlAppId"`
	TenantID                  string  `json:"tenantId"`
}

type listJSON struct {
	ODataContext  string             `json:"@odata.context"`
	Value         []subscriptionJSON `json:"value"`
	ODataNextLink string             `json:"@odata.nextLink,omitempty"`
}

// apiError is a refusal on its way to writeError.
type apiError struct {
	status        int
	code, message string
}

func badRequest(msg string) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "InvalidRequest", message: msg}
}

func (e *apiError) write(w http.ResponseWriter) { writeError(w, e.status, e.code, e.message) }

// invalidUser is Exchange's answer for a mailbox path whose user is neither an id nor a
// userPrincipalName (an alias, or unknown).
func invalidUser(user string) *apiError {
	return &apiError{status: http.StatusNotFound, code: "ErrorInvalidUser", message: "The requested user '" + user + "' is invalid."}
}

func notFound() *apiError {
	return &apiError{status: http.StatusNotFound, code: "ResourceNotFound", message: "The object was not found."}
}

func (s *Server) handleCreate(w http.ResponseWriter, r *http.Request, tok accessToken) {
	var in subscriptionBody
	if e := decodeBody(w, r, &in); e != nil {
		e.write(w)
		return
	}
	sub, tls, e := s.newSubscription(in, tok)
	if e != nil {
		e.write(w)
		return
	}

	s.mu.Lock()
	mode, delay := s.handshake, s.createDelay
	upn, known := s.upnLocked(tok.tenant, sub.Mailbox)
	known = known && s.mailboxInTenant(tok.tenant, upn) // identity.go: not another tenant's mailbox
	s.mu.Unlock()
	if !known {
		// The resource's user must be its id or userPrincipalName, in the
		// token's tenant, as in every mail path.
		invalidUser(sub.Mailbox).write(w)
		return
	}

	// Graph goes on with a create whose caller gave up (a client timeout):
	// the subscription is made all the same, an orphan the caller must find
	// by listing. So nothing below depends on the request's context.
	ctx := context.WithoutCancel(r.Context())
	// The handshake runs without the lock: it waits on the receiver for up to ten seconds.
	if e := s.handshakeAll(ctx, mode, sub); e != nil {
		e.write(w)
		return
	}
	if delay > 0 {
		time.Sleep(delay)
	}

	// Graph does not refuse a second subscription for the same resource and
	// notification URL: each create gets its own id.
	s.mu.Lock()
	s.seq++
	sub.ID = newGUID()
	upn, _ = s.upnLocked(sub.TenantID, sub.Mailbox) // checked before the handshake
	sub.UserID = s.userIDLocked(sub.TenantID, upn)
	s.subs[sub.ID] = &stored{Subscription: sub, seq: s.seq, tls: tls}
	st := *s.subs[sub.ID]
	early := s.notifyOnCreate
	s.mu.Unlock()

	if early > 0 {
		ctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
		status, err := s.NotifyBatch(ctx, repeatNew(sub.ID, early)...)
		cancel()
		s.log.Info("graphfake: notification before the create answered", "subscription", sub.ID, "status", status, "error", err)
	}
	writeJSON(w, http.StatusCreated, toJSON(st, contextURL(r, "subscriptions/$entity")))
}

// newSubscription checks a create body as Graph does and returns the subscription it asks for.
func (s *Server) newSubscription(in subscriptionBody, tok accessToken) (Subscription, string, *apiError) {
	if in.ChangeType != "created" {
		return Subscription{}, "", badRequest("changeType '" + in.ChangeType + "' is not supported: this fake serves mail folders' 'created' notifications only.")
	}
	mailbox, folder, ok := parseResource(in.Resource)
	if !ok {
		return Subscription{}, "", badRequest("Resource '" + in.Resource + "' is not supported: expected /users/{mailbox}/mailFolders('{id}')/messages.")
	}
	if err := checkNotificationURL(in.NotificationURL, s.allowHTTP); err != "" {
		return Subscription{}, "", badRequest("notificationUrl " + err)
	}
	if in.LifecycleNotificationURL != "" {
		if err := checkNotificationURL(in.LifecycleNotificationURL, s.allowHTTP); err != "" {
			return Subscription{}, "", badRequest("lifecycleNotificationUrl " + err)
		}
	}
	if utf8.RuneCountInString(in.ClientState) > maxClientState {
		return Subscription{}, "", badRequest("clientState must not be longer than 128 characters.")
	}
	if in.IncludeResourceData || in.EncryptionCertificate != nil {
		return Subscription{}, "", badRequest("Rich notifications (includeResourceData) are not supported by this fake.")
	}
	tls := in.LatestSupportedTLSVersion
	switch tls {
	case "":
		tls = "v1_2"
	case "v1_0", "v1_1", "v1_2", "v1_3":
	default:
		return Subscription{}, "", badRequest("Invalid latestSupportedTlsVersion '" + tls + "'.")
	}
	exp, e := s.checkExpiry(in.ExpirationDateTime)
	if e != nil {
		return Subscription{}, "", e
	}
	return Subscription{
		TenantID:                 tok.tenant,
		ApplicationID:            tok.appID,
		Resource:                 in.Resource,
		ChangeType:               in.ChangeType,
		NotificationURL:          in.NotificationURL,
		LifecycleNotificationURL: in.LifecycleNotificationURL,
		ClientState:              in.ClientState,
		ExpirationDateTime:       exp,
		Mailbox:                  mailbox,
		FolderID:                 folder,
	}, tls, nil
}

// checkNotificationURL refuses what Graph refuses: a URL that is not absolute HTTPS (http only
// with Options.AllowHTTPNotificationURL).
func checkNotificationURL(raw string, allowHTTP bool) string {
	if raw == "" {
		return "is required."
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && !(allowHTTP && u.Scheme == "http")) {
		return "'" + raw + "' is invalid: the URL must be an absolute https URL."
	}
	return ""
}

// checkExpiry parses an expirationDateTime and checks it against the lifetime Graph allows.
func (s *Server) checkExpiry(raw string) (time.Time, *apiError) {
	if raw == "" {
		return time.Time{}, badRequest("expirationDateTime is required.")
	}
	exp, err := time.Parse(time.RFC3339Nano, raw)
	if err != nil {
		return time.Time{}, badRequest("Cannot convert the literal '" + raw + "' to the expected type 'Edm.DateTimeOffset'.")
	}
	// Graph keeps a tenth of a microsecond; truncating here makes the stored value what it answers.
	exp = exp.UTC().Truncate(100 * time.Nanosecond)
	now := s.now()
	if !exp.After(now) {
		return time.Time{}, badRequest("Subscription expiration can only be in the future: '" + raw + "' is in the past.")
	}
	if exp.Sub(now) > s.maxLifetime {
		return time.Time{}, &apiError{status: http.StatusBadRequest, code: "ExtensionError",
			message: "Operation: Create; Exception: [Status Code: BadRequest; Reason: Subscription expiration can only be " +
				strconv.Itoa(int(s.maxLifetime/time.Minute)) + " minutes in the future.]"}
	}
	return exp, nil
}

// parseResource accepts the resources a mail folder subscription may name, case-insensitively as
// Graph matches its path segments: /users/{mailbox}/mailFolders('{id}')/messages, with or without
// the leading slash, and /users/{mailbox}/mailFolders/{id}/messages. A quote inside a quoted id is
// doubled; mailbox and folder id are percent-decoded.
func parseResource(res string) (mailbox, folder string, ok bool) {
	rest, ok := cutPrefixFold(strings.TrimPrefix(res, "/"), "users/")
	if !ok {
		return "", "", false
	}
	escaped, rest, ok := strings.Cut(rest, "/")
	if !ok || escaped == "" {
		return "", "", false
	}
	if mailbox, err := url.PathUnescape(escaped); err == nil {
		escaped = mailbox
	}
	if rest, ok = cutPrefixFold(rest, "mailFolders"); !ok {
		return "", "", false
	}
	switch {
	case strings.HasPrefix(rest, "('"):
		var b strings.Builder
		i := 2
		for ; i < len(rest); i++ {
			if rest[i] != '\'' {
				b.WriteByte(rest[i])
				continue
			}
			if i+1 < len(rest) && rest[i+1] == '\'' {
				b.WriteByte('\'')
				i++
				continue
			}
			break
		}
		if i >= len(rest) || !strings.HasPrefix(rest[i:], "')") {
			return "", "", false
		}
		folder, rest = b.String(), rest[i+2:]
	case strings.HasPrefix(rest, "/"):
		folder, rest, _ = strings.Cut(rest[1:], "/")
		rest = "/" + rest
	default:
		return "", "", false
	}
	if folder == "" || !strings.EqualFold(rest, "/messages") {
		return "", "", false
	}
	// Graph decodes the path: a folder id's / or % arrives percent-encoded.
	if f, err := url.PathUnescape(folder); err == nil {
		folder = f
	}
	return escaped, folder, true
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return s, false
	}
	return s[len(prefix):], true
}

// userIDLocked returns the GUID the fake's notifications name mailbox by, the same one every time.
func (s *Server) userIDLocked(tenant, mailbox string) string {
	key := strings.ToLower(tenant) + "\x00" + strings.ToLower(mailbox)
	id, ok := s.users[key]
	if !ok {
		id = newGUID()
		s.users[key] = id
	}
	return id
}

// liveLocked returns the caller's subscription id, or nil when it does not exist, has expired or
// belongs to another tenant or app (Graph does not tell those apart).
func (s *Server) liveLocked(id string, tok accessToken) *stored {
	st := s.lookupLocked(id)
	if st == nil || !strings.EqualFold(st.TenantID, tok.tenant) || st.ApplicationID != tok.appID {
		return nil
	}
	return st
}

// lookupLocked returns the live subscription id of any tenant, dropping it if it has expired.
func (s *Server) lookupLocked(id string) *stored {
	st, ok := s.subs[id]
	if !ok {
		return nil
	}
	if !st.ExpirationDateTime.After(s.now()) {
		delete(s.subs, id)
		return nil
	}
	return st
}

func (s *Server) handleGet(w http.ResponseWriter, r *http.Request, tok accessToken) {
	s.mu.Lock()
	st := s.liveLocked(r.PathValue("id"), tok)
	var cp stored
	if st != nil {
		cp = *st
	}
	s.mu.Unlock()
	if st == nil {
		notFound().write(w)
		return
	}
	writeJSON(w, http.StatusOK, toJSON(cp, contextURL(r, "subscriptions/$entity")))
}

func (s *Server) handleRenew(w http.ResponseWriter, r *http.Request, tok accessToken) {
	var in map[string]json.RawMessage
	if e := decodeBody(w, r, &in); e != nil {
		e.write(w)
		return
	}
	for k := range in {
		if k != "expirationDateTime" && k != "@odata.type" {
			badRequest("Only expirationDateTime can be updated; the request also sets '" + k + "'.").write(w)
			return
		}
	}
	var raw string
	if v, ok := in["expirationDateTime"]; !ok || json.Unmarshal(v, &raw) != nil {
		badRequest("expirationDateTime is required.").write(w)
		return
	}
	s.mu.Lock()
	st := s.liveLocked(r.PathValue("id"), tok)
	s.mu.Unlock()
	if st == nil {
		notFound().write(w)
		return
	}
	exp, e := s.checkExpiry(raw)
	if e != nil {
		e.message = strings.Replace(e.message, "Operation: Create", "Operation: Update", 1)
		e.write(w)
		return
	}
	s.mu.Lock()
	// Looked up again: the subscription may have expired or been deleted meanwhile.
	st = s.liveLocked(r.PathValue("id"), tok)
	var cp stored
	if st != nil {
		st.ExpirationDateTime = exp
		st.renewals++
		cp = *st
	}
	s.mu.Unlock()
	if st == nil {
		notFound().write(w)
		return
	}
	writeJSON(w, http.StatusOK, toJSON(cp, contextURL(r, "subscriptions/$entity")))
}

func (s *Server) handleDelete(w http.ResponseWriter, r *http.Request, tok accessToken) {
	s.mu.Lock()
	st := s.liveLocked(r.PathValue("id"), tok)
	if st != nil {
		delete(s.subs, st.ID)
	}
	s.mu.Unlock()
	if st == nil {
		notFound().write(w)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleList pages by creation order; $skiptoken carries the last sequence number served, so that
// deletions between pages neither skip nor repeat a subscription.
func (s *Server) handleList(w http.ResponseWriter, r *http.Request, tok accessToken) {
	var after int64
	if v := r.URL.Query().Get("$skiptoken"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			badRequest("Invalid $skiptoken.").write(w)
			return
		}
		after = n
	}
	s.mu.Lock()
	s.pruneLocked()
	var mine []stored
	for _, st := range s.subs {
		if st.seq > after && strings.EqualFold(st.TenantID, tok.tenant) && st.ApplicationID == tok.appID {
			mine = append(mine, *st)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(mine, func(a, b stored) int { return int(a.seq - b.seq) })

	out := listJSON{ODataContext: contextURL(r, "subscriptions"), Value: []subscriptionJSON{}}
	if len(mine) > s.pageSize {
		mine = mine[:s.pageSize]
		next := baseURL(r) + "/v1.0/subscriptions?$skiptoken=" + strconv.FormatInt(mine[len(mine)-1].seq, 10)
		out.ODataNextLink = next
	}
	for _, st := range mine {
		out.Value = append(out.Value, toJSON(st, ""))
	}
	writeJSON(w, http.StatusOK, out)
}

func toJSON(st stored, odataContext string) subscriptionJSON {
	j := subscriptionJSON{
		ODataContext:              odataContext,
		ID:                        st.ID,
		Resource:                  st.Resource,
		ApplicationID:             st.ApplicationID,
		ChangeType:                st.ChangeType,
		NotificationURL:           st.NotificationURL,
		ExpirationDateTime:        formatTime(st.ExpirationDateTime),
		CreatorID:                 st.ApplicationID,
		LatestSupportedTLSVersion: st.tls,
		TenantID:                  st.TenantID,
	}
	if st.ClientState != "" {
		cs := st.ClientState
		j.ClientState = &cs
	}
	if st.LifecycleNotificationURL != "" {
		u := st.LifecycleNotificationURL
		j.LifecycleNotificationURL = &u
	}
	return j
}

func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func contextURL(r *http.Request, what string) string {
	return baseURL(r) + "/v1.0/$metadata#" + what
}

// decodeBody reads a bounded JSON body, refusing properties the target does not have, with the
// error Graph gives for a subscription.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) *apiError {
	return decodeStrict(w, r, v, "BadRequest", "Property '%s' does not exist on type 'microsoft.graph.subscription'. Make sure to only use property names that are defined by the type.")
}

// decodeStrict reads a bounded JSON body strictly; an unknown property is refused with code and
// unknown (a format naming the property), as Graph words it for the resource type at hand.
func decodeStrict(w http.ResponseWriter, r *http.Request, v any, code, unknown string) *apiError {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRequestBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			return &apiError{status: http.StatusRequestEntityTooLarge, code: "RequestEntityTooLarge", message: "The request body is too large."}
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
			return &apiError{status: http.StatusBadRequest, code: code, message: fmt.Sprintf(unknown, field)}
		}
		return &apiError{status: http.StatusBadRequest, code: code, message: "Unable to read JSON request payload: " + err.Error()}
	}
	return nil
}

func repeatNew(subID string, n int) []Notification {
	items := make([]Notification, n)
	for i := range items {
		items[i] = Notification{SubscriptionID: subID}
	}
	return items
}
