package tickets

import (
	"context"
	"errors"
	"testing"
	"time"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
)

type replyStore struct {
	MessageStore
	channel int64
	got     *ReplyPlan
}

func (s *replyStore) MessageChannel(context.Context, int64, int64) (int64, error) {
	return s.channel, nil
}

// SendReply decides for a message with a prepared reply in a ticket of the
// store's channel.
func (s *replyStore) SendReply(_ context.Context, _, _ int64, decide func(Message, Ticket) (ReplyPlan, error)) (Message, error) {
	p, err := decide(Message{AIReply: AIReply{Status: AIReplyPrepared, Text: "Prepared."}}, Ticket{ID: 9, ChannelID: s.channel})
	s.got = &p
	return Message{}, err
}

// send-reply marks the reply's delivery pending exactly in tickets of a
// live e-mail channel; a mail context that does not answer is an error.
func TestSendReplyEmailChannel(t *testing.T) {
	look := &fakeLookups{channels: map[int64]contracts.ChannelReply{
		1: {Exists: true, Kind: "email"},
		2: {Exists: true, Kind: "chat"},
		3: {Exists: true, Kind: "email", IsDeleted: true},
	}}
	for _, tc := range []struct {
		channel int64
		pending bool
	}{{1, true}, {2, false}, {3, false}, {4, false}} {
		st := &replyStore{channel: tc.channel}
		if _, err := NewMessages(st, look, time.Now).SendReply(context.Background(), 1, 2, 3, nil); err != nil {
			t.Fatal(err)
		}
		if st.got == nil || (st.got.Delivery != nil) != tc.pending || st.got.Reply.Message.SenderAccountID == nil ||
			*st.got.Reply.Message.SenderAccountID != 2 {
			t.Fatalf("channel %d: %+v", tc.channel, st.got)
		}
	}
	down := &fakeLookups{err: apperr.E(apperr.Unavailable, "mail does not answer")}
	st := &replyStore{channel: 1}
	if _, err := NewMessages(st, down, time.Now).SendReply(context.Background(), 1, 2, 3, nil); !errors.Is(err, down.err) || st.got != nil {
		t.Fatalf("lookup down: %v, sent %+v", err, st.got)
	}
}
