package tickets

// Ticket references in mail subjects, and who may join a ticket by one.
//
// A reply sent by mail carries "[#<ticketID>-<tag>]" in its subject; the
// tag is an HMAC of (customer, ticket id) under the tickets secret, so the
// reference is readable by agents (the id comes first) but cannot be made
// up from a ticket id: ticket ids are sequential, and a bare "[#1234]"
// would let anyone write into ticket 1234.

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"regexp"
	"strconv"
	"strings"
)

// RefTagLen is the length of a reference's tag: 10 characters of
// Crockford's base32, 50 bits of the HMAC.
const RefTagLen = 10

// MinRefSecretLen is the shortest secret accepted (bytes).
const MinRefSecretLen = 32

// refEncoding is Crockford's base32 alphabet (no I, L, O, U: readable and
// hard to mistype), without padding.
var refEncoding = base32.NewEncoding("0123456789ABCDEFGHJKMNPQRSTVWXYZ").WithPadding(base32.NoPadding)

// subjectRef is a reference in a subject: "[#1234-K7QX9M2PAB]", any case
// (a tag retyped in lower case is the same tag).
var subjectRef = regexp.MustCompile(`\[#([0-9]{1,18})-([0-9A-Za-z]{` + strconv.Itoa(RefTagLen) + `})\]`)

// Refs computes and checks the references of tickets. The first secret
// signs; every secret is accepted when reading, so a rotated secret keeps
// answering to the references sent under the previous one.
type Refs struct {
	secrets [][]byte
}

// NewRefs returns the references signed by current, also accepting the
// previous secrets that are not empty. Each secret has at least
// MinRefSecretLen bytes.
func NewRefs(current string, previous ...string) (*Refs, error) {
	r := &Refs{}
	for i, s := range append([]string{current}, previous...) {
		if s == "" && i > 0 {
			continue
		}
		if len(s) < MinRefSecretLen {
			return nil, errors.New("a ticket reference secret has fewer than " + strconv.Itoa(MinRefSecretLen) + " bytes")
		}
		r.secrets = append(r.secrets, []byte(s))
	}
	return r, nil
}

func refTag(secret []byte, customerID, ticketID int64) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("ticket-ref:" + strconv.FormatInt(customerID, 10) + ":" + strconv.FormatInt(ticketID, 10)))
	return refEncoding.EncodeToString(mac.Sum(nil))[:RefTagLen]
}

// Ref is the reference of the customer's ticket, "<ticketID>-<tag>" (a
// subject carries it as "[#<ref>]").
func (r *Refs) Ref(customerID, ticketID int64) string {
	return strconv.FormatInt(ticketID, 10) + "-" + refTag(r.secrets[0], customerID, ticketID)
}

// Find returns the ticket of the first reference in subject that is valid
// for the customer under any secret (0: none). Bare "[#1234]" references
// and references with a wrong tag are not references.
func (r *Refs) Find(customerID int64, subject string) int64 {
	if r == nil {
		return 0
	}
	for _, m := range subjectRef.FindAllStringSubmatch(subject, 8) {
		id, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil || id <= 0 {
			continue
		}
		tag := []byte(strings.ToUpper(m[2]))
		for _, s := range r.secrets {
			if hmac.Equal(tag, []byte(refTag(s, customerID, id))) {
				return id
			}
		}
	}
	return 0
}

// Participants are the people of a ticket's mail thread: its end user's
// address and the From, To and Cc addresses of the ticket's mails.
type Participants struct {
	EndUser string
	Thread  []string
}

// MayJoinBySubject reports whether a mail from sender may join a ticket
// found by the reference in its subject: the sender must be the ticket's
// end user or already on its mail thread. The mailbox the mail came to is
// in To of every mail of the thread, so it makes nobody a participant.
// Addresses compare without case.
//
// Threading by In-Reply-To/References and the provider's conversation id
// needs no such check: those name a mail of the thread, which only the
// people who got that mail know (see the README).
func MayJoinBySubject(sender, mailbox string, p Participants) bool {
	sender = strings.TrimSpace(sender)
	if sender == "" || strings.EqualFold(sender, strings.TrimSpace(mailbox)) {
		return false
	}
	if strings.EqualFold(sender, strings.TrimSpace(p.EndUser)) {
		return true
	}
	for _, a := range p.Thread {
		if strings.EqualFold(sender, strings.TrimSpace(a)) {
			return true
		}
	}
	return false
}
