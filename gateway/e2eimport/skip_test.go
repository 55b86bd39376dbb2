package e2eimport

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/graphfake"
	"supportplatform.dev/pkg/randid"
)

// folderSkips is what the folder answer says of the mails its import
// skipped for good.
type folderSkips struct {
	FolderID        int64   `json:"folderID"`
	SkippedMessages int64   `json:"skippedMessages"`
	LastSkipReason  *string `json:"lastSkipReason"`
	LastSkipAt      *string `json:"lastSkipAt"`
}

// A mail that can never be imported (Graph's reply for it exceeds the
// client's 16 MiB cap) does not stop the folder: the mails around it become
// tickets, the folder answer counts it with its reason, and a later mail is
// imported too (the round stored its delta link).
func TestUnimportableMailDoesNotStopTheFolder(t *testing.T) {
	t.Parallel()
	mc := newMailChannel(t)
	from := sender("Grace Hopper")
	huge := mc.deliver(t, graphfake.DeliverMail{Subject: "huge " + randid.Hex(4), From: from, Text: strings.Repeat("x", 17<<20)})
	after := "after the huge one " + randid.Hex(4)
	mc.deliver(t, graphfake.DeliverMail{Subject: after, From: from, Text: "still there?"})
	mc.waitTicket(t, after)

	path := fmt.Sprintf("/api/Channels/%d/folders/%d", mc.channel.ChannelID, mc.folder.FolderID)
	var f folderSkips
	e2ekit.Eventually(t, 15*time.Second, "the skipped mail counted on the folder", func() bool {
		wantStatus(t, client(t).Do(http.MethodGet, path, mc.tn.AgentToken, nil), http.StatusOK, &f)
		return f.SkippedMessages > 0
	})
	if f.SkippedMessages != 1 || f.LastSkipReason == nil || !strings.HasPrefix(*f.LastSkipReason, "too-big: message "+huge+": ") || f.LastSkipAt == nil {
		t.Fatalf("folder %+v", f)
	}
	later := "later " + randid.Hex(4)
	mc.deliver(t, graphfake.DeliverMail{Subject: later, From: from, Text: "and now?"})
	mc.waitTicket(t, later)
	wantStatus(t, client(t).Do(http.MethodGet, path, mc.tn.AgentToken, nil), http.StatusOK, &f)
	if f.SkippedMessages != 1 {
		t.Fatalf("the skipped mail was counted again: %+v", f)
	}
}
