package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// The message-to-reply case: how long the assistant (offline engine) takes
// from an end user's message created through the API to its prepared reply
// visible on the message.

const (
	replyMessages = 100
	replyInterval = 100 * time.Millisecond
	replyPoll     = 20 * time.Millisecond
)

// replyKnowledge is the bench customer's knowledge base: a topic, its
// description, one linked document, and a question the document answers.
var replyKnowledge = []struct{ topic, description, title, content, question string }{
	{"Invoices", "Invoices, receipts, billing documents and VAT",
		"Downloading an invoice", "Every invoice is available in your account under Billing > Invoices. Click the invoice number to download it as a PDF. Invoices are issued on the first day of each month.",
		"Where can I download the invoice for last month? I need the PDF for my accountant."},
	{"Delivery", "Shipping, parcels, delivery times and tracking",
		"Tracking a parcel", "Parcels leave our warehouse within one working day. You receive a tracking link by e-mail as soon as the parcel is shipped; delivery takes two to four working days.",
		"My parcel has not arrived yet, how can I track the delivery?"},
	{"Password", "Logging in, passwords and two-factor authentication",
		"Resetting your password", "To reset your password, open the login page and click Forgot password. We send a reset link by e-mail; it is valid for thirty minutes.",
		"I forgot my password and cannot log in, how do I reset it?"},
	{"Refunds", "Refunds, returns and money back",
		"Getting a refund", "Refunds are paid to the original payment method within five working days after we receive the returned item. You get an e-mail when the refund is issued.",
		"When will I get my refund for the returned item?"},
	{"Subscription", "Plans, upgrades, downgrades and cancelling a subscription",
		"Changing your plan", "You can upgrade or downgrade your plan at any time under Settings > Subscription. An upgrade takes effect at once; a downgrade at the end of the billing period.",
		"How do I upgrade my subscription plan to the business tier?"},
}

func messageToReplyCase() *benchCase {
	return &benchCase{
		Name: "message-to-reply", Needs: []string{"auth", "topics", "mailingest", "tickets", "assistant"}, Customer: "Bench Assistant",
		Note: fmt.Sprintf("%d end-user messages, one every %s, created through the API in a customer with %d topics and linked documents "+
			"-> aiReply prepared on the message (polled every %s); the offline engine", replyMessages, replyInterval, len(replyKnowledge), replyPoll),
		Latency: messageToReply,
	}
}

func messageToReply(ctx context.Context, e *benchEnv) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	post := func(path string, body any, v any) error {
		raw, _ := json.Marshal(body)
		data, err := e.API.Do(ctx, http.MethodPost, path, string(raw), http.StatusCreated)
		if err != nil {
			return err
		}
		return json.Unmarshal(data, v)
	}
	for _, k := range replyKnowledge {
		var tp struct{ TopicID int64 }
		var doc struct{ DocumentID int64 }
		var link struct{ TopicDocumentID int64 }
		if err := post("/api/Topics", map[string]any{"name": k.topic + " bench", "description": k.description}, &tp); err != nil {
			return nil, err
		}
		if err := post("/api/Documents", map[string]any{"title": k.title, "content": k.content, "isHook": false}, &doc); err != nil {
			return nil, err
		}
		if err := post("/api/TopicDocuments", map[string]any{"topicID": tp.TopicID, "documentID": doc.DocumentID, "relevanceScore": 10}, &link); err != nil {
			return nil, err
		}
	}
	var channel struct{ ChannelID int64 }
	if err := post("/api/Channels", map[string]any{"name": "Bench assistant", "kind": "web"}, &channel); err != nil {
		return nil, err
	}
	var user struct{ EndUserID int64 }
	if err := post("/api/EndUsers", map[string]any{"name": "Ada Bench", "email": "ada-bench@example.org"}, &user); err != nil {
		return nil, err
	}

	var mu sync.Mutex
	created := map[int64]time.Time{}
	var lats []time.Duration
	var notPrepared []int64
	var wg sync.WaitGroup
	errs := make(chan error, replyMessages)
	for i := range replyMessages {
		k := replyKnowledge[i%len(replyKnowledge)]
		var m struct{ MessageID int64 }
		start := time.Now()
		if err := post("/api/TicketMessages", map[string]any{"message": k.question, "senderType": "EndUser",
			"subject": fmt.Sprintf("Question %d", i), "channelID": channel.ChannelID, "endUserID": user.EndUserID}, &m); err != nil {
			return nil, err
		}
		mu.Lock()
		created[m.MessageID] = start
		mu.Unlock()
		wg.Go(func() {
			path := fmt.Sprintf("/api/TicketMessages/%d", m.MessageID)
			for ctx.Err() == nil {
				data, err := e.API.Do(ctx, http.MethodGet, path, "", http.StatusOK)
				if err != nil {
					errs <- err
					return
				}
				var msg struct {
					AIReply struct {
						Status string  `json:"status"`
						Engine *string `json:"engine"`
					} `json:"aiReply"`
				}
				if err := json.Unmarshal(data, &msg); err != nil {
					errs <- err
					return
				}
				switch {
				case msg.AIReply.Status == "prepared":
					mu.Lock()
					lats = append(lats, time.Since(start))
					mu.Unlock()
					return
				case msg.AIReply.Status == "none" && msg.AIReply.Engine != nil:
					// The engine ran and could not ground a reply.
					mu.Lock()
					notPrepared = append(notPrepared, m.MessageID)
					mu.Unlock()
					return
				}
				time.Sleep(replyPoll)
			}
		})
		time.Sleep(replyInterval)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%d of %d messages got a reply in time", len(lats), replyMessages)
	}
	slices.Sort(lats)
	line := fmt.Sprintf("%d messages: reply prepared for %d, p50 %s, p90 %s, p99 %s, max %s", replyMessages, len(lats),
		pct(lats, 50), pct(lats, 90), pct(lats, 99), pct(lats, 100))
	if len(notPrepared) > 0 {
		return []string{line}, errors.New("no reply prepared for messages " + strings.Trim(fmt.Sprint(notPrepared), "[]"))
	}
	return []string{line}, nil
}

// assistantEvalCase prints the offline engine's topic accuracy and
// prompt-document recall on the evaluation set of the tickets module
// (`assistant eval`; targets top-1 >= 0.7, recall@3 >= 0.8).
func assistantEvalCase() *benchCase {
	return &benchCase{
		Name: "assistant-eval", Needs: []string{"assistant"},
		Note: "the offline engine on the evaluation set (services/tickets/internal/assistant/eval: 10 topics, 90 messages in en/es/fr/de): " +
			"topic accuracy top-1/top-3 and prompt-document recall@3; targets top-1 >= 0.7, recall@3 >= 0.8",
		Latency: func(ctx context.Context, e *benchEnv) ([]string, error) {
			out, err := e.Stack.Command(ctx, "assistant", "eval").CombinedOutput()
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if err != nil {
				return lines, fmt.Errorf("assistant eval: %w", err)
			}
			var top1, top3, recall float64
			if _, err := fmt.Sscanf(lines[0], "all  top-1 %f  top-3 %f  recall@3 %f", &top1, &top3, &recall); err != nil {
				return lines, fmt.Errorf("assistant eval: unexpected output %q", lines[0])
			}
			if top1 < 0.7 || recall < 0.8 {
				return lines, fmt.Errorf("targets missed: top-1 %.3f (>= 0.7), recall@3 %.3f (>= 0.8)", top1, recall)
			}
			return lines, nil
		},
	}
}
