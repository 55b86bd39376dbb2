// Package replier delivers agents' replies by mail. It consumes
// message.reply.sent from EVENTS and, for tickets of e-mail channels with a
// provider, sends the reply through Microsoft Graph: a reply to the end
// user's latest mail when the ticket has one (Graph threads it), else a new
// mail whose subject carries the ticket reference tickets signed
// ("Re: <subject> [#<id>-<tag>]").
//
// Exactly once per reply, as far as that can be known: every reply has a
// row in the store (sent_replies), claimed before Graph is called, so a
// redelivered or duplicated event, or two workers with the same event,
// never send one reply twice. The row is marked "sending" with its attempt
// number and a lease before the call; a row still "sending" after its lease
// means a worker died between handing the mail to Graph and recording the
// answer. Graph offers no idempotent send, so that reply is not sent again
// blindly: it is marked failed with "outcome unknown" (at most once), and
// an operator resends it if the mailbox's Sent Items has no mail with its
// X-SupportPlatform-Reply header.
//
// Transient failures (throttling after the client's own retries, 5xx,
// transport) are retried with backoff through JetStream redelivery;
// permanent ones (other 4xx, a refused token) and the last attempt fail the
// reply. Success and failure are recorded with the events
// message.reply.delivered and message.reply.failed, written to the mail
// outbox in the same transaction as the status.
package replier

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"time"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/services/mail/internal/mail"
)

// HeaderTicket carries the ticket id on every mail the replier sends,
// beside mail.HeaderReply. Graph accepts only custom headers whose names
// start with X-.
const HeaderTicket = "X-SupportPlatform-Ticket"

// Statuses of a reply's row.
const (
	// StatusPending: not sent yet (new, or waiting for a retry).
	StatusPending = "pending"
	// StatusSending: handed to Graph by attempt Attempts until LeaseUntil.
	StatusSending = "sending"
	StatusSent    = "sent"
	StatusFailed  = "failed"
	StatusSkipped = "skipped"
)

// How a reply went out.
const (
	MethodReply    = "reply"
	MethodSendMail = "sendMail"
)

// Reply identifies one agent reply: the message in the tickets context and
// where it belongs.
type Reply struct {
	CustomerID, MessageID, TicketID, ChannelID int64
}

// Key is the reply's idempotency key, <customerID>.<messageID>: the value
// of mail.HeaderReply.
func (r Reply) Key() string {
	return strconv.FormatInt(r.CustomerID, 10) + "." + strconv.FormatInt(r.MessageID, 10)
}

// Record is a reply's row.
type Record struct {
	Reply
	Status    string
	Attempts  int
	LastError string
	Method    string
	// LeaseUntil is set while Status is sending.
	LeaseUntil    *time.Time
	NextAttemptAt *time.Time
	SentAt        *time.Time
}

// ClaimRequest says what a delivery wants of a reply's row.
type ClaimRequest struct {
	// Settle, when set (StatusSkipped or StatusFailed), settles a pending
	// reply with Reason instead of claiming it for sending.
	Settle string
	Reason string
	// LeaseUntil is the end of the claim: the time by which the attempt
	// will have recorded its outcome, or else died.
	LeaseUntil time.Time
}

// Claim is a reply's row after ClaimReply. Claimed is true when this caller
// made it "sending" and may call Graph, as attempt Attempts; otherwise the
// row is as another delivery left it.
type Claim struct {
	Record
	Claimed bool
	// Settled is true when this call settled it as asked (ClaimRequest.Settle).
	Settled bool
}

// Finish is the outcome of an attempt.
type Finish struct {
	// Status is StatusSent, StatusFailed, or StatusPending (to be retried at
	// RetryAt).
	Status  string
	Error   string
	Method  string
	RetryAt time.Time
}

// Store keeps the replies' rows and writes their events. Only ClaimReply
// and FinishReply change a row; message.reply.delivered and
// message.reply.failed go to the outbox in the same transaction as a row
// becoming sent or failed.
type Store interface {
	// Channel returns a channel of the customer, deleted or not (apperr
	// NotFound when it has none of that id).
	Channel(ctx context.Context, customerID, channelID int64) (mail.Channel, error)
	// MailboxUser returns the provider user resolved for the channel's
	// mailbox (zero when none was).
	MailboxUser(ctx context.Context, customerID, channelID int64) (mail.MailboxUser, error)
	// ClaimReply creates the reply's row (pending) unless it exists, locks
	// it and, when it is pending, settles it (req.Settle) or makes it
	// sending with attempts+1 and req.LeaseUntil.
	ClaimReply(ctx context.Context, r Reply, req ClaimRequest) (Claim, error)
	// FinishReply records the outcome of attempt `attempt`; false when the
	// row is no longer sending by that attempt (nothing is written then).
	FinishReply(ctx context.Context, r Reply, attempt int, f Finish) (bool, error)
}

// Sender sends mail through Graph (graph.ReplySender). Both answer Graph's
// 202. Failures the replier decides by are *SendError.
type Sender interface {
	// Reply answers the mailbox's message messageID (Graph threads it and
	// sends it to the message's sender); errors.Is(err, ErrNotFound) when
	// that message is gone.
	Reply(ctx context.Context, tenant, mailbox, messageID string, m OutgoingMail) error
	// SendMail sends a new mail from the mailbox.
	SendMail(ctx context.Context, tenant, mailbox string, m OutgoingMail) error
}

// Address is a mail address with its display name.
type Address struct {
	Name    string
	Address string
}

// OutgoingMail is a reply the platform sends for an agent.
type OutgoingMail struct {
	Subject string
	// Text is the body, sent as plain text.
	Text string
	// To is empty for a reply (the provider answers the message's sender).
	To []Address
	// Headers are custom internet message headers (names start with X-).
	Headers map[string]string
}

// The classes of a Sender's failures (errors.Is). A failure of none of
// them (the network, a timeout, an unknown kind) is retried.
var (
	// ErrThrottled: the provider shed the call or failed transiently;
	// retry, after SendError.RetryAfter when it asked for a wait.
	ErrThrottled = errors.New("throttled by the provider")
	// ErrRefused: the provider or its token endpoint refused the mail for
	// good (the mailbox or permission is wrong, the mail is refused).
	ErrRefused = errors.New("refused by the provider")
	// ErrNotFound: the message replied to is gone from the mailbox.
	ErrNotFound = errors.New("not found at the provider")
)

// SendError is a Sender's failure with its class (one of the Err values
// above); its text is the cause's.
type SendError struct {
	Class error
	// RetryAfter is the wait the provider asked for (0: none).
	RetryAfter time.Duration
	Err        error
}

func (e *SendError) Error() string   { return e.Err.Error() }
func (e *SendError) Unwrap() []error { return []error{e.Class, e.Err} }

// Outcomes of one delivery of a reply's event (the metric's label).
const (
	OutcomeSent      = "sent"      // Graph accepted it
	OutcomeRetry     = "retry"     // a transient failure; redelivered later
	OutcomeFailed    = "failed"    // given up: permanent failure, last attempt, or nowhere to send it
	OutcomeUnknown   = "unknown"   // an earlier attempt died mid-call: failed, not resent
	OutcomeSkipped   = "skipped"   // not a ticket of an e-mail channel with a provider
	OutcomeDuplicate = "duplicate" // already sent, failed or skipped: nothing done
	OutcomeBusy      = "busy"      // another delivery is sending it right now
	OutcomeInvalid   = "invalid"   // an event without customer, message or ticket
)

var outcomes = []string{OutcomeSent, OutcomeRetry, OutcomeFailed, OutcomeUnknown, OutcomeSkipped,
	OutcomeDuplicate, OutcomeBusy, OutcomeInvalid}

// ErrOutcomeUnknown is the recorded failure of a reply whose attempt died
// between handing the mail to Graph and recording Graph's answer.
var ErrOutcomeUnknown = errors.New("outcome unknown: an attempt was interrupted while Graph was sending the mail; " +
	"it was not sent again to avoid a duplicate (look for it in the mailbox's Sent Items by its " + mail.HeaderReply + " header, and resend it if it is missing)")

// Delivery is where an event's delivery stands in the redelivery schedule.
type Delivery struct {
	// Number counts deliveries from 1.
	Number int
	// Last is true on the last delivery JetStream will make.
	Last bool
}

// Result is what one delivery did.
type Result struct {
	Outcome string
	// RetryIn, when positive, asks for a redelivery after it; zero acks.
	RetryIn time.Duration
}

// Handler handles one delivery of a message.reply.sent event.
type Handler struct {
	store   Store
	sender  Sender
	backoff []time.Duration
	timeout time.Duration
	lease   time.Duration
	metrics *Metrics
	now     func() time.Time
	log     *slog.Logger
}

// HandlerOptions configure a Handler.
type HandlerOptions struct {
	// Backoff is the delay before each redelivery after a transient failure
	// (the last entry repeats); empty uses DefaultBackoff.
	Backoff []time.Duration
	// SendTimeout bounds one attempt's Graph call; zero uses 60 s.
	SendTimeout time.Duration
	Metrics     *Metrics
	Now         func() time.Time
	Log         *slog.Logger
}

// DefaultBackoff is the redelivery schedule of REPLY_BACKOFF.
var DefaultBackoff = []time.Duration{time.Second, 5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute}

// leaseMargin is how much longer than the Graph call a claim lasts: the
// time to record the outcome.
const leaseMargin = 15 * time.Second

// NewHandler returns a handler.
func NewHandler(store Store, sender Sender, o HandlerOptions) *Handler {
	h := &Handler{store: store, sender: sender, backoff: o.Backoff, timeout: o.SendTimeout, metrics: o.Metrics, now: o.Now, log: o.Log}
	if len(h.backoff) == 0 {
		h.backoff = DefaultBackoff
	}
	if h.timeout <= 0 {
		h.timeout = 60 * time.Second
	}
	h.lease = h.timeout + leaseMargin
	if h.now == nil {
		h.now = time.Now
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	return h
}

// Handle delivers one reply. An error is a failure of the store: the event
// is to be redelivered with backoff.
func (h *Handler) Handle(ctx context.Context, ev contracts.Event[contracts.ReplySent], d Delivery) (Result, error) {
	res, err := h.handle(ctx, ev, d)
	if err == nil {
		h.metrics.count(res.Outcome)
	}
	return res, err
}

func (h *Handler) handle(ctx context.Context, ev contracts.Event[contracts.ReplySent], d Delivery) (Result, error) {
	data := ev.Data
	r := Reply{CustomerID: ev.CustomerID, MessageID: data.MessageID, TicketID: data.TicketID, ChannelID: data.ChannelID}
	log := h.log.With("customerID", r.CustomerID, "messageID", r.MessageID, "ticketID", r.TicketID)
	if r.CustomerID <= 0 || r.MessageID <= 0 || r.TicketID <= 0 {
		log.WarnContext(ctx, "reply event without customer, message or ticket dropped", "eventID", ev.ID)
		return Result{Outcome: OutcomeInvalid}, nil
	}
	ch, err := h.store.Channel(ctx, r.CustomerID, r.ChannelID)
	if err != nil && !apperr.Is(err, apperr.NotFound) {
		return Result{}, fmt.Errorf("replier: channel %d: %w", r.ChannelID, err)
	}
	req := ClaimRequest{LeaseUntil: h.now().Add(h.lease)}
	req.Settle, req.Reason = eligibility(ch, err == nil, data)
	c, err := h.store.ClaimReply(ctx, r, req)
	if err != nil {
		return Result{}, fmt.Errorf("replier: claim: %w", err)
	}
	switch {
	case c.Settled:
		log.InfoContext(ctx, "reply not sent by mail", "status", c.Status, "reason", req.Reason)
		if c.Status == StatusFailed {
			return Result{Outcome: OutcomeFailed}, nil
		}
		return Result{Outcome: OutcomeSkipped}, nil
	case c.Claimed:
		return h.attempt(ctx, log, r, ch, data, c.Attempts, d)
	case c.Status != StatusSending:
		return Result{Outcome: OutcomeDuplicate}, nil
	}
	// Another delivery holds it: alive while its lease runs, else it died
	// somewhere between claiming and recording Graph's answer.
	now := h.now()
	if c.LeaseUntil != nil && c.LeaseUntil.After(now) {
		if d.Last {
			// Its holder records the outcome; this delivery has no later turn.
			return Result{Outcome: OutcomeBusy}, nil
		}
		return Result{Outcome: OutcomeBusy, RetryIn: c.LeaseUntil.Sub(now) + time.Second}, nil
	}
	ok, err := h.store.FinishReply(ctx, r, c.Attempts, Finish{Status: StatusFailed, Error: ErrOutcomeUnknown.Error()})
	if err != nil {
		return Result{}, fmt.Errorf("replier: finish: %w", err)
	}
	if !ok {
		return Result{Outcome: OutcomeDuplicate}, nil
	}
	log.ErrorContext(ctx, "reply attempt was interrupted; not resent", "attempt", c.Attempts, "key", r.Key())
	return Result{Outcome: OutcomeUnknown}, nil
}

// eligibility says whether a reply goes out by mail: "" when it does, else
// how its row is settled and why. Replies in channels that never send mail
// (web, api, or e-mail without a provider) are skipped; so are those of a
// missing or deleted channel. A reply that should go by mail but has no
// address to go to fails, so that the agent sees it was not delivered.
func eligibility(ch mail.Channel, found bool, data contracts.ReplySent) (status, reason string) {
	switch {
	case !found:
		return StatusSkipped, "channel not found"
	case ch.Kind != mail.KindEmail:
		return StatusSkipped, "not an e-mail channel (" + ch.Kind + ")"
	case ch.IsDeleted:
		return StatusSkipped, "the channel is deleted"
	case ch.Provider != mail.ProviderMicrosoft365 || ch.EmailAddress == "":
		return StatusSkipped, "the channel has no mail provider"
	case !ch.TenantConnected:
		return StatusFailed, mail.ErrTenantNotConnected.Error()
	case data.ReplyToProviderID == "" && strings.TrimSpace(data.To.Address) == "":
		return StatusFailed, "the end user has no e-mail address"
	}
	return "", ""
}

// attempt sends a claimed reply and records the outcome.
func (h *Handler) attempt(ctx context.Context, log *slog.Logger, r Reply, ch mail.Channel, data contracts.ReplySent,
	attempt int, d Delivery) (Result, error) {
	sendCtx, cancel := context.WithTimeout(ctx, h.timeout)
	method, err := h.send(sendCtx, log, r, ch, data)
	cancel()
	var f Finish
	res := Result{}
	switch {
	case err == nil:
		f, res.Outcome = Finish{Status: StatusSent, Method: method}, OutcomeSent
	case !Transient(err) || d.Last:
		f, res.Outcome = Finish{Status: StatusFailed, Method: method, Error: err.Error()}, OutcomeFailed
	default:
		res.RetryIn = h.delay(d.Number, err)
		f, res.Outcome = Finish{Status: StatusPending, Method: method, Error: err.Error(), RetryAt: h.now().Add(res.RetryIn)}, OutcomeRetry
	}
	// Recorded even when the delivery's context ended meanwhile: Graph's
	// answer is known now and must not be lost.
	ok, ferr := h.store.FinishReply(context.WithoutCancel(ctx), r, attempt, f)
	if ferr != nil {
		// The row stays sending until its lease ends; a redelivery then
		// fails it as outcome unknown rather than risk a second mail.
		return Result{}, fmt.Errorf("replier: record %s of attempt %d: %w", f.Status, attempt, ferr)
	}
	if !ok {
		log.WarnContext(ctx, "reply outcome not recorded: the attempt's claim had lapsed", "attempt", attempt, "status", f.Status)
		return Result{Outcome: OutcomeDuplicate}, nil
	}
	switch res.Outcome {
	case OutcomeSent:
		log.InfoContext(ctx, "reply sent by mail", "attempt", attempt, "method", method)
	case OutcomeFailed:
		log.WarnContext(ctx, "reply could not be sent by mail", "attempt", attempt, "method", method, "error", err.Error())
	default:
		log.WarnContext(ctx, "reply sending failed; retrying", "attempt", attempt, "retryIn", res.RetryIn, "error", err.Error())
	}
	return res, nil
}

// send replies to the end user's mail when there is one and Graph still
// has it, else sends a new mail.
func (h *Handler) send(ctx context.Context, log *slog.Logger, r Reply, ch mail.Channel, data contracts.ReplySent) (string, error) {
	tenant, err := ch.GraphTenant()
	if err != nil {
		return "", err
	}
	m := OutgoingMail{
		Subject: Subject(data.Subject, data.TicketRef),
		Text:    data.Text,
		Headers: map[string]string{mail.HeaderReply: r.Key(), HeaderTicket: strconv.FormatInt(r.TicketID, 10)},
	}
	// Graph's paths take the mailbox user's id (an alias fails there); a
	// channel not resolved yet is named by its address, as before.
	mailbox := ch.EmailAddress
	if u, err := h.store.MailboxUser(ctx, ch.CustomerID, ch.ID); err != nil {
		return MethodSendMail, err
	} else if u.ID != "" && u.Address == ch.EmailAddress {
		mailbox = u.ID
	}
	if data.ReplyToProviderID != "" {
		err := h.sender.Reply(ctx, tenant, mailbox, data.ReplyToProviderID, m)
		if !errors.Is(err, ErrNotFound) {
			return MethodReply, err
		}
		if strings.TrimSpace(data.To.Address) == "" {
			return MethodReply, fmt.Errorf("the end user's mail is gone from the mailbox and the end user has no e-mail address: %w", err)
		}
		log.InfoContext(ctx, "the end user's mail is gone from the mailbox; sending a new mail", "providerID", data.ReplyToProviderID)
	}
	m.To = []Address{{Name: data.To.Name, Address: strings.TrimSpace(data.To.Address)}}
	return MethodSendMail, h.sender.SendMail(ctx, tenant, mailbox, m)
}

// delay is the wait before the redelivery after delivery n (from 1): the
// schedule's, or Graph's Retry-After when that is longer.
func (h *Handler) delay(n int, err error) time.Duration {
	d := h.backoff[min(max(n, 1)-1, len(h.backoff)-1)]
	var se *SendError
	if errors.As(err, &se) && se.RetryAfter > d {
		d = se.RetryAfter
	}
	return d
}

// Transient reports whether a failed send may succeed later: Graph or the
// token endpoint throttled or failed with a transient 5xx (after the
// client's own retries, ErrThrottled), or the request did not complete
// (transport, timeout). A refusal (ErrRefused, ErrNotFound) is permanent.
// Errors of unknown kind (a context that ended mid-call) are retried: the
// schedule bounds them.
func Transient(err error) bool {
	if errors.Is(err, ErrThrottled) {
		return true
	}
	return !errors.Is(err, ErrRefused) && !errors.Is(err, ErrNotFound)
}

// subjectRefs are ticket references in a subject: tickets' signed
// "[#1234-K7QX9M2PAB]" and the bare "[#1234]" of earlier replies.
var subjectRefs = regexp.MustCompile(`\s*\[#[0-9]{1,18}(?:-[0-9A-Za-z]{1,32})?\]`)

// Subject is a reply's subject: "Re: <subject> [#<ticketRef>]" (ticketRef
// as tickets made it, message.reply.sent's ticketRef), without a second
// "Re:" when the subject has one already (any case). Every other ticket
// reference in the subject goes, so the end user's answer names only this
// ticket; an event without a reference (made before tickets signed them)
// gets none, since a bare "[#<id>]" no longer threads.
func Subject(subject, ticketRef string) string {
	s := strings.TrimSpace(subjectRefs.ReplaceAllString(subject, ""))
	if ticketRef != "" {
		s = strings.TrimSpace(s + " [#" + ticketRef + "]")
	}
	if len(s) < 3 || !strings.EqualFold(s[:3], "re:") {
		s = "Re: " + s
	}
	return strings.TrimSpace(s)
}
