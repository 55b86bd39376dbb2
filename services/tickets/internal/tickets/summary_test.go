package tickets

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func tkMsg(sender SenderType, text string) Message { return Message{SenderType: sender, Text: text} }

func TestTkSummarizeConversation(t *testing.T) {
	tk := Ticket{Subject: "Double charge on order 4711", Status: StatusResolved}
	msgs := []Message{
		tkMsg(SenderEndUser, "Hello,\n\nI was charged twice for order 4711 on my credit card. "+
			"The second charge of 59.90 EUR appeared yesterday. Can you please refund the duplicate charge?\n\n"+
			"On Mon, 3 Mar 2025, Shop <support@example.com> wrote:\n> Thank you for your order 4711.\n> Your parcel ships today.\n\n"+
			"Thanks, Ada"),
		tkMsg(SenderAgent, "Hi Ada, thanks for reaching out! I checked order 4711 and I can see the duplicate charge. "+
			"I have issued a refund of 59.90 EUR for the duplicate charge. It should reach your credit card within 5 business days."),
		tkMsg(SenderEndUser, "Great, thank you. The refund arrived today."),
	}
	got := Summarize(tk, msgs)
	t.Log(got)
	for _, want := range []string{
		"Subject: Double charge on order 4711 (3 messages).",
		"End user: I was charged twice for order 4711 on my credit card.",
		"Agent: ",
		"I have issued a refund of 59.90 EUR for the duplicate charge.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	if !strings.HasSuffix(got, " Status: Resolved.") {
		t.Errorf("summary does not end with the status")
	}
	// The quoted reply, its header and the greeting are not the
	// conversation.
	for _, not := range []string{"parcel ships", "wrote:", "Thanks, Ada", "reaching out"} {
		if strings.Contains(got, not) {
			t.Errorf("summary holds %q", not)
		}
	}
	// In conversation order: the end user's problem before the agent's
	// answer.
	if strings.Index(got, "charged twice") > strings.Index(got, "issued a refund") {
		t.Error("sentences out of order")
	}
	body := strings.TrimSuffix(strings.SplitN(got, ").", 2)[1], " Status: Resolved.")
	if n := utf8.RuneCountInString(body); n > SummaryBudget+60 {
		t.Errorf("%d characters of sentences", n)
	}
	if Summarize(tk, msgs) != got {
		t.Error("not deterministic")
	}
}

func TestTkSummarizeLongConversationKeepsBudget(t *testing.T) {
	var msgs []Message
	for i := range 40 {
		sender := SenderEndUser
		if i%2 == 1 {
			sender = SenderAgent
		}
		msgs = append(msgs, tkMsg(sender, "The VPN client disconnects every ten minutes on the office network. "+
			"We restarted the router again today. Please also check the firewall logs for dropped VPN packets."))
	}
	got := Summarize(Ticket{Subject: "VPN disconnects", Status: StatusOpen}, msgs)
	t.Log(got)
	if n := utf8.RuneCountInString(got); n > SummaryBudget+200 {
		t.Fatalf("%d characters", n)
	}
	if !strings.Contains(got, "VPN") || !strings.HasSuffix(got, "Status: Open.") || !strings.Contains(got, "(40 messages)") {
		t.Fatalf("summary %q", got)
	}
	if n := strings.Count(got, "The VPN client disconnects"); n != 1 {
		t.Fatalf("a repeated sentence told %d times", n)
	}
}

func TestTkSummarizeEdgeCases(t *testing.T) {
	cases := []struct {
		name string
		t    Ticket
		msgs []Message
		want string
	}{
		{"no messages", Ticket{Subject: "Login fails on Android", Status: StatusOpen}, nil,
			"Subject: Login fails on Android. No messages yet. Status: Open."},
		{"subject with its own full stop", Ticket{Subject: "Help!", Status: StatusPending}, nil,
			"Subject: Help. No messages yet. Status: Pending."},
		{"one message without punctuation", Ticket{Subject: "Invoice", Status: StatusClosed},
			[]Message{tkMsg(SenderEndUser, "where is my invoice for march")},
			"Subject: Invoice (1 message). End user: where is my invoice for march. Status: Closed."},
		{"only stop words", Ticket{Subject: "Hi", Status: StatusOpen}, []Message{tkMsg(SenderEndUser, "Hi. Thanks!")},
			"Subject: Hi (1 message). Status: Open."},
		{"AI and system senders", Ticket{Subject: "Password", Status: StatusEscalated},
			[]Message{tkMsg(SenderSystem, "Ticket escalated by rule 7."), tkMsg(SenderAI, "Suggested reset link sent.")},
			"Subject: Password (2 messages). System: Ticket escalated by rule 7. AI assistant: Suggested reset link sent. Status: Escalated."},
		{"German", Ticket{Subject: "Rechnung falsch", Status: StatusOpen},
			[]Message{tkMsg(SenderEndUser, "Die Rechnung für März ist falsch. Bitte schicken Sie mir eine neue Rechnung.")},
			"Subject: Rechnung falsch (1 message). End user: Die Rechnung für März ist falsch. Bitte schicken Sie mir eine neue Rechnung. Status: Open."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Summarize(tc.t, tc.msgs); got != tc.want {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestTkSplitSentences(t *testing.T) {
	got := splitSentences("It broke. Version 2.5 is installed!! Why?\n> quoted line\nSecond line without stop\n\n  ")
	want := []string{"It broke.", "Version 2.5 is installed!!", "Why?", "Second line without stop"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q", got)
	}
	long := strings.Repeat("word ", 100)
	if s := splitSentences(long); len(s) != 1 || utf8.RuneCountInString(s[0]) > maxSentenceChars+1 || !strings.HasSuffix(s[0], "…") {
		t.Fatalf("long sentence %q", s)
	}
}
