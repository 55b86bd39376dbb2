package graphfake

import (
	"context"
	"errors"
	"fmt"
	"html"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"
)

// DefaultNotificationDuplicates is how many times Deliver posts each change notification: Graph
// usually sends two or three for one new message.
const DefaultNotificationDuplicates = 2

// Attachment kinds, as Graph's @odata.type names them without the "#microsoft.graph." prefix.
const (
	AttachmentFile      = "fileAttachment"
	AttachmentItem      = "itemAttachment"
	AttachmentReference = "referenceAttachment"
)

// Kinds of SentMail.
const (
	SentReply    = "reply"
	SentSendMail = "sendMail"
)

// The sent items folder, where replies and sent mail are stored (never the inbox).
const sentItems = "sentitems"

// wellKnownFolders are the folder names Graph accepts in place of ids, case-insensitively.
var wellKnownFolders = []string{"inbox", "sentitems", "drafts", "deleteditems", "junkemail", "archive", "outbox"}

// Address is a mail address with its display name.
type Address struct {
	Name    string `json:"name,omitempty"`
	Address string `json:"address"`
}

// MailAttachment is an attachment of a delivered mail. File attachments carry Content; item and
// reference attachments may come without bytes (Size then says what Graph reports).
type MailAttachment struct {
	// Kind is AttachmentFile (the default), AttachmentItem or AttachmentReference.
	Kind        string `json:"kind,omitempty"`
	Name        string `json:"name"`
	ContentType string `json:"contentType,omitempty"`
	// Content is the attachment's bytes (base64 in JSON).
	Content   []byte `json:"content,omitempty"`
	Size      int    `json:"size,omitempty"`
	IsInline  bool   `json:"isInline,omitempty"`
	ContentID string `json:"contentId,omitempty"`
}

// DeliverMail is a mail arriving in a mailbox. Only Mailbox is required.
type DeliverMail struct {
	// Mailbox is the recipient mailbox's address (case-insensitive).
	Mailbox string `json:"mailbox"`
	// Folder is a well-known folder name or any folder id; empty means "inbox".
	Folder string `json:"folder,omitempty"`
	// ID is the message's immutable id; empty makes a Graph-like one.
	ID string `json:"id,omitempty"`
	// ReceivedDateTime defaults to the fake's now.
	ReceivedDateTime time.Time `json:"receivedDateTime,omitzero"`
	Subject          string    `json:"subject,omitempty"`
	From             Address   `json:"from"`
	// Sender defaults to From.
	Sender          Address   `json:"sender,omitzero"`
	To, Cc, ReplyTo []Address `json:",omitempty"`
	// InternetMessageID defaults to a generated "<...@fake.example>".
	InternetMessageID string `json:"internetMessageId,omitempty"`
	// ConversationID defaults to a new one.
	ConversationID string `json:"conversationId,omitempty"`
	// InReplyTo and References become internet message headers of those names.
	InReplyTo  string   `json:"inReplyTo,omitempty"`
	References []string `json:"references,omitempty"`
	// Headers are further internet message headers.
	Headers map[string]string `json:"headers,omitempty"`
	// HTML, when set, is the body (contentType html); else Text is (contentType text).
	HTML        string           `json:"html,omitempty"`
	Text        string           `json:"text,omitempty"`
	IsDraft     bool             `json:"isDraft,omitempty"`
	Attachments []MailAttachment `json:"attachments,omitempty"`
	// Notifications is how many times each live subscription on the mailbox's folder is notified;
	// nil uses Options.NotificationDuplicates, 0 stores the mail silently.
	Notifications *int `json:"notifications,omitempty"`
}

// SentMail is a reply or a sendMail the fake received, in the words the client used.
type SentMail struct {
	Kind    string `json:"kind"` // SentReply or SentSendMail
	Mailbox string `json:"mailbox"`
	// InReplyTo is the id of the message replied to (replies only).
	InReplyTo string    `json:"inReplyTo,omitempty"`
	Subject   string    `json:"subject"`
	To        []Address `json:"to"`
	// Text is the reply's comment or the message body's content; ContentType the body's type
	// ("text" for a comment).
	Text        string            `json:"text"`
	ContentType string            `json:"contentType"`
	Headers     map[string]string `json:"headers,omitempty"`
	// ID and InternetMessageID are the stored copy's in the sent items folder ("" when not saved).
	ID                string `json:"id,omitempty"`
	InternetMessageID string `json:"internetMessageId,omitempty"`
}

// MailboxStats are one mailbox's mail API counters.
type MailboxStats struct {
	// Calls counts mail API calls naming the mailbox; InFlight those being served now; Peak the
	// most served at once.
	Calls, InFlight, Peak int
	// WithoutImmutableID counts calls without Prefer: IdType="ImmutableId".
	WithoutImmutableID int
	// DeltaCalls and MessageCalls count delta pages and single-message reads.
	DeltaCalls, MessageCalls int
}

type header struct{ Name, Value string }

type mailMessage struct {
	id, folder                        string
	seq                               int64 // change sequence: delta rounds follow it
	received                          time.Time
	subject                           string
	from, sender                      Address
	to, cc, replyTo                   []Address
	internetMessageID, conversationID string
	headers                           []header
	bodyType, body                    string // "html" or "text"
	isDraft                           bool
	attachments                       []mailAttachment
}

type mailAttachment struct {
	id string
	MailAttachment
}

// tombstone is a message that left a folder: delta rounds report it as @removed.
type tombstone struct {
	id, folder string
	seq        int64
}

type mailbox struct {
	address    string
	messages   map[string]*mailMessage // by id (case-sensitive)
	tombstones []tombstone
	epoch      int // ExpireDeltaTokens bumps it; links of an older epoch answer 410
	stats      MailboxStats
}

// mailState is the fake's mail side, guarded by Server.mu.
type mailState struct {
	boxes      map[string]*mailbox // by lower-cased address
	aliases    map[string]string   // lower-cased alias -> its user's lower-cased UPN
	seq        int64
	tokens     map[string]deltaState
	sent       []SentMail
	latency    time.Duration
	duplicates int
}

func newMailState(duplicates int) mailState {
	if duplicates <= 0 {
		duplicates = DefaultNotificationDuplicates
	}
	return mailState{boxes: map[string]*mailbox{}, aliases: map[string]string{}, tokens: map[string]deltaState{}, duplicates: duplicates}
}

func folderKey(folder string) string {
	folder = strings.TrimSpace(folder)
	if folder == "" {
		return "inbox"
	}
	if strings.HasPrefix(folder, "('") && strings.HasSuffix(folder, "')") {
		folder = strings.ReplaceAll(folder[2:len(folder)-2], "''", "'")
	}
	for _, wk := range wellKnownFolders {
		if strings.EqualFold(folder, wk) {
			return wk
		}
	}
	return folder
}

// boxLocked returns the mailbox of address, creating it: every address is a mailbox here, and
// an alias (AddAlias) is its user's.
func (s *Server) boxLocked(address string) *mailbox {
	key := strings.ToLower(strings.TrimSpace(address))
	if upn, ok := s.mail.aliases[key]; ok {
		key, address = upn, upn
	}
	mb, ok := s.mail.boxes[key]
	if !ok {
		mb = &mailbox{address: strings.TrimSpace(address), messages: map[string]*mailMessage{}}
		s.mail.boxes[key] = mb
	}
	return mb
}

// resolveMailboxLocked turns a path's user (the user's id, the GUID the fake assigned in the
// caller's tenant, or its userPrincipalName) into a mailbox; ok is false for an unknown GUID and,
// as Graph refuses them in paths, for an alias.
func (s *Server) resolveMailboxLocked(tenant, user string) (*mailbox, bool) {
	upn, ok := s.upnLocked(tenant, user)
	if !ok || !s.mailboxInTenant(tenant, upn) { // identity.go: another tenant's mailbox is not in this directory
		return nil, false
	}
	return s.boxLocked(upn), true
}

// upnLocked returns the userPrincipalName (lower-case) of a path's user: its id in tenant or its
// UPN; ok is false for an unknown id, an alias or nothing.
func (s *Server) upnLocked(tenant, user string) (string, bool) {
	prefix := strings.ToLower(tenant) + "\x00"
	for key, id := range s.users {
		if strings.EqualFold(id, user) && strings.HasPrefix(key, prefix) {
			return strings.TrimPrefix(key, prefix), true
		}
	}
	key := strings.ToLower(strings.TrimSpace(user))
	if _, alias := s.mail.aliases[key]; alias || looksLikeGUID(user) || key == "" {
		return "", false
	}
	return key, true
}

// AddAlias gives the user upn another address (a proxyAddresses entry, such as a primary SMTP
// address other than the UPN or a secondary one). Mail to alias lands in upn's mailbox; Graph's
// paths refuse the alias (404 ErrorInvalidUser) and GET /users/{alias} is 404: find the user with
// $filter=proxyAddresses/any(x:x eq 'smtp:{alias}').
func (s *Server) AddAlias(upn, alias string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	upn, alias = strings.ToLower(strings.TrimSpace(upn)), strings.ToLower(strings.TrimSpace(alias))
	if upn != alias {
		s.mail.aliases[alias] = upn
	}
}

// aliasesLocked returns upn's aliases, sorted.
func (s *Server) aliasesLocked(upn string) []string {
	var out []string
	for a, u := range s.mail.aliases {
		if u == upn {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out
}

func looksLikeGUID(v string) bool {
	if len(v) != 36 {
		return false
	}
	for i, r := range v {
		switch i {
		case 8, 13, 18, 23:
			if r != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
				return false
			}
		}
	}
	return true
}

// UserID returns the GUID by which the fake names mailbox in tenant (in notifications' resources
// and as /users/{id} in paths).
func (s *Server) UserID(tenant, mailbox string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.userIDLocked(tenant, mailbox)
}

// SetMailLatency makes every mail API call take at least d while it counts as in flight, so that
// a client's concurrency limit shows in MailboxStats.Peak.
func (s *Server) SetMailLatency(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mail.latency = d
}

// AddMail stores a mail without notifying anyone and returns its id.
func (s *Server) AddMail(d DeliverMail) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.storeLocked(d)
	if err != nil {
		return "", err
	}
	return m.id, nil
}

// Deliver stores a mail and then posts a "created" notification naming it to every live
// subscription on its mailbox and folder, d.Notifications times each (Graph's duplicates), one POST
// each. It returns the message id and the delivery failures (transport errors, not the receivers'
// statuses); the mail is stored either way.
func (s *Server) Deliver(ctx context.Context, d DeliverMail) (string, error) {
	s.mu.Lock()
	m, err := s.storeLocked(d)
	if err != nil {
		s.mu.Unlock()
		return "", err
	}
	n := s.mail.duplicates
	if d.Notifications != nil {
		n = *d.Notifications
	}
	var subs []string
	if n > 0 {
		s.pruneLocked()
		for _, st := range s.subs {
			mb, ok := s.resolveMailboxLocked(st.TenantID, st.Mailbox)
			if ok && strings.EqualFold(mb.address, d.Mailbox) && folderKey(st.FolderID) == m.folder {
				subs = append(subs, st.ID)
			}
		}
		slices.Sort(subs)
	}
	s.mu.Unlock()

	var errs []error
	for range n {
		for _, sub := range subs {
			if _, err := s.NotifyBatch(ctx, Notification{SubscriptionID: sub, MessageID: m.id}); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return m.id, errors.Join(errs...)
}

func (s *Server) storeLocked(d DeliverMail) (*mailMessage, error) {
	if strings.TrimSpace(d.Mailbox) == "" {
		return nil, errors.New("graphfake: a mail needs a mailbox")
	}
	mb := s.boxLocked(d.Mailbox)
	m := &mailMessage{
		id: d.ID, folder: folderKey(d.Folder), received: d.ReceivedDateTime.UTC(), subject: d.Subject,
		from: d.From, sender: d.Sender, to: d.To, cc: d.Cc, replyTo: d.ReplyTo,
		internetMessageID: d.InternetMessageID, conversationID: d.ConversationID, isDraft: d.IsDraft,
		bodyType: "text", body: d.Text,
	}
	if m.id == "" {
		m.id = newMessageID()
	}
	if _, dup := mb.messages[m.id]; dup {
		return nil, fmt.Errorf("graphfake: mailbox %s already has message %s", d.Mailbox, m.id)
	}
	if m.received.IsZero() {
		m.received = s.now().UTC()
	}
	m.received = m.received.Truncate(time.Second) // Graph's receivedDateTime has whole seconds
	if m.sender == (Address{}) {
		m.sender = m.from
	}
	if m.internetMessageID == "" {
		m.internetMessageID = "<" + strings.ReplaceAll(newGUID(), "-", "") + "@fake.example>"
	}
	if m.conversationID == "" {
		m.conversationID = "AAQkAG" + strings.ReplaceAll(newGUID(), "-", "")
	}
	if d.HTML != "" {
		m.bodyType, m.body = "html", d.HTML
	}
	m.headers = []header{{"Message-ID", m.internetMessageID}, {"Subject", m.subject}}
	if d.InReplyTo != "" {
		m.headers = append(m.headers, header{"In-Reply-To", d.InReplyTo})
	}
	if len(d.References) > 0 {
		m.headers = append(m.headers, header{"References", strings.Join(d.References, " ")})
	}
	for _, name := range slices.Sorted(maps.Keys(d.Headers)) {
		m.headers = append(m.headers, header{name, d.Headers[name]})
	}
	for _, a := range d.Attachments {
		if a.Kind == "" {
			a.Kind = AttachmentFile
		}
		switch a.Kind {
		case AttachmentFile, AttachmentItem, AttachmentReference:
		default:
			return nil, fmt.Errorf("graphfake: unknown attachment kind %q", a.Kind)
		}
		if a.Size == 0 {
			a.Size = len(a.Content)
		}
		if a.ContentType == "" && a.Kind == AttachmentFile {
			a.ContentType = "application/octet-stream"
		}
		m.attachments = append(m.attachments, mailAttachment{id: newMessageID(), MailAttachment: a})
	}
	s.mail.seq++
	m.seq = s.mail.seq
	mb.messages[m.id] = m
	return m, nil
}

// RemoveMail deletes a message, as a user deleting or moving it would; the next delta round of
// its folder reports it as @removed. It reports whether the message existed.
func (s *Server) RemoveMail(mailbox, id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	mb := s.boxLocked(mailbox)
	m, ok := mb.messages[id]
	if !ok {
		return false
	}
	delete(mb.messages, id)
	s.mail.seq++
	mb.tombstones = append(mb.tombstones, tombstone{id: id, folder: m.folder, seq: s.mail.seq})
	return true
}

// ExpireDeltaTokens makes every delta link of mailbox issued so far answer 410 Gone with
// syncStateNotFound, as Graph does when it has dropped a sync state.
func (s *Server) ExpireDeltaTokens(mailbox string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.boxLocked(mailbox).epoch++
}

// Sent returns the replies and sendMails received, in order.
func (s *Server) Sent() []SentMail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.mail.sent)
}

// Mail returns the ids of the messages in mailbox's folder, oldest change first.
func (s *Server) Mail(mailbox, folder string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ms []*mailMessage
	for _, m := range s.boxLocked(mailbox).messages {
		if m.folder == folderKey(folder) {
			ms = append(ms, m)
		}
	}
	slices.SortFunc(ms, func(a, b *mailMessage) int { return int(a.seq - b.seq) })
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.id
	}
	return ids
}

// MailboxStats returns mailbox's mail API counters.
func (s *Server) MailboxStats(mailbox string) MailboxStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.boxLocked(mailbox).stats
}

// mailAPI wraps a mail endpoint: api's counting, token and faults, then the mailbox named by the
// path (404 for an unknown user id) counted in flight, and the configured latency.
func (s *Server) mailAPI(h func(http.ResponseWriter, *http.Request, accessToken, *mailbox)) http.HandlerFunc {
	return s.api(func(w http.ResponseWriter, r *http.Request, tok accessToken) {
		s.mu.Lock()
		mb, ok := s.resolveMailboxLocked(tok.tenant, r.PathValue("mb"))
		if !ok {
			s.mu.Unlock()
			invalidUser(r.PathValue("mb")).write(w)
			return
		}
		mb.stats.Calls++
		mb.stats.InFlight++
		mb.stats.Peak = max(mb.stats.Peak, mb.stats.InFlight)
		if !preferences(r)[strings.ToLower("IdType")] {
			mb.stats.WithoutImmutableID++
		}
		latency := s.mail.latency
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			mb.stats.InFlight--
			s.mu.Unlock()
		}()
		if latency > 0 {
			t := time.NewTimer(latency)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		h(w, r, tok, mb)
	})
}

// preferences parses the Prefer headers: a key for each preference, true when its value is what
// the fake honours (IdType="ImmutableId"; any other preference is just present).
func preferences(r *http.Request) map[string]bool {
	out := map[string]bool{}
	for k, v := range preferValues(r) {
		out[k] = k != "idtype" || strings.EqualFold(v, "ImmutableId")
	}
	return out
}

// preferValues maps each preference's lower-cased name to its unquoted value.
func preferValues(r *http.Request) map[string]string {
	out := map[string]string{}
	for _, line := range r.Header.Values("Prefer") {
		for _, p := range strings.Split(line, ",") {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if k = strings.ToLower(strings.TrimSpace(k)); k != "" {
				out[k] = strings.Trim(strings.TrimSpace(v), `"`)
			}
		}
	}
	return out
}

var (
	scriptOrStyle = regexp.MustCompile(`(?is)<script\b.*?</script\s*>|<style\b.*?</style\s*>|<head\b.*?</head\s*>`)
	// Block elements start and end lines, as Exchange's conversion renders
	// them.
	lineBreakTag = regexp.MustCompile(`(?i)<br\s*/?>|</?(p|div|tr|li|h[1-6]|blockquote|table|hr)\b[^>]*>`)
	anyTag       = regexp.MustCompile(`(?s)<[^>]*>`)
	manyNewlines = regexp.MustCompile(`\n{3,}`)
)

// htmlToText is the fake's stand-in for Graph's text conversion: tags stripped, block ends as line
// breaks, entities decoded.
func htmlToText(s string) string {
	s = scriptOrStyle.ReplaceAllString(s, "")
	s = lineBreakTag.ReplaceAllString(s, "\n")
	s = anyTag.ReplaceAllString(s, "")
	s = html.UnescapeString(strings.ReplaceAll(s, "\r\n", "\n"))
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return strings.TrimSpace(manyNewlines.ReplaceAllString(strings.Join(lines, "\n"), "\n\n"))
}

// userType is Graph's user, as far as the fake serves it.
var userType = &entityType{name: "microsoft.graph.user",
	props: []string{"id", "userPrincipalName", "mail", "displayName", "proxyAddresses", "accountEnabled", "givenName", "surname",
		"otherMails", "userType"}}

// userJSON is the user resource of upn in tenant, with $select's properties (keep nil: Graph's
// default set, without proxyAddresses).
func (s *Server) userJSONLocked(tenant, upn string, keep map[string]bool) map[string]any {
	proxies := []string{"SMTP:" + upn}
	for _, a := range s.aliasesLocked(upn) {
		proxies = append(proxies, "smtp:"+a)
	}
	u := map[string]any{"id": s.userIDLocked(tenant, upn), "userPrincipalName": upn, "mail": upn,
		"displayName": strings.Split(upn, "@")[0], "proxyAddresses": proxies}
	return selectFields(u, keep)
}

func directoryNotFound(what string) *apiError {
	return &apiError{status: http.StatusNotFound, code: "Request_ResourceNotFound",
		message: "Resource '" + what + "' does not exist or one of its queried reference-property objects are not present."}
}

// handleUser serves GET /users/{id | userPrincipalName}, which takes nothing else: an alias or
// another proxy address is 404 Request_ResourceNotFound.
func (s *Server) handleUser(w http.ResponseWriter, r *http.Request, tok accessToken) {
	keep, e := parseSelect(userType, r.URL.Query().Get("$select"))
	if e != nil {
		e.write(w)
		return
	}
	s.mu.Lock()
	upn, ok := s.upnLocked(tok.tenant, r.PathValue("user"))
	var out map[string]any
	if ok {
		out = s.userJSONLocked(tok.tenant, upn, keep)
	}
	s.mu.Unlock()
	if !ok {
		directoryNotFound(r.PathValue("user")).write(w)
		return
	}
	out["@odata.context"] = contextURL(r, "users/$entity")
	writeJSON(w, http.StatusOK, out)
}

// proxyFilter matches the one $filter of GET /users the fake serves: a user by any of its
// addresses, proxyAddresses/any(x:x eq 'smtp:a@b.example').
var proxyFilter = regexp.MustCompile(`(?i)^\s*proxyAddresses/any\((\w+):\s*(\w+)\s+eq\s+'((?:[^']|'')*)'\s*\)\s*$`)

// handleUsers serves GET /users?$filter=proxyAddresses/any(x:x eq 'smtp:{address}'): the users
// with that address among their proxy addresses (prefix and address compared without case).
func (s *Server) handleUsers(w http.ResponseWriter, r *http.Request, tok accessToken) {
	keep, e := parseSelect(userType, r.URL.Query().Get("$select"))
	if e != nil {
		e.write(w)
		return
	}
	m := proxyFilter.FindStringSubmatch(r.URL.Query().Get("$filter"))
	if m == nil || m[1] != m[2] {
		badRequest("Unsupported $filter: this fake serves proxyAddresses/any(x:x eq 'smtp:{address}') only.").write(w)
		return
	}
	prefix, address, ok := strings.Cut(strings.ReplaceAll(m[3], "''", "'"), ":")
	users := []map[string]any{}
	s.mu.Lock()
	if ok && strings.EqualFold(prefix, "smtp") {
		address = strings.ToLower(strings.TrimSpace(address))
		upn, isAlias := s.mail.aliases[address]
		if !isAlias {
			upn = address
		}
		if _, known := s.mail.boxes[upn]; known || isAlias {
			users = append(users, s.userJSONLocked(tok.tenant, upn, keep))
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"@odata.context": contextURL(r, "users"), "value": users})
}
