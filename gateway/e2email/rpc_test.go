package e2email

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"supportplatform.dev/pkg/contracts"
)

// askChannel makes the channel lookup other services make, as the harness
// user (services that call it get the right through contracts.Services).
func askChannel(t *testing.T, customerID, channelID int64) contracts.ChannelReply {
	t.Helper()
	nc, err := nats.Connect(stk.NATSURL, nats.CustomInboxPrefix(contracts.InboxPrefix(contracts.HarnessUser)))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	data, _ := json.Marshal(contracts.ChannelRequest{CustomerID: customerID, ChannelID: channelID})
	msg, err := nc.Request(backends.Names.Subject(contracts.RPCChannel), data, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		Data  contracts.ChannelReply `json:"data"`
		Error any                    `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &env); err != nil || env.Error != nil {
		t.Fatalf("reply %s: %v", msg.Data, err)
	}
	return env.Data
}

// The channel lookup over NATS and the channel events on EVENTS.
func TestChannelLookupAndEvents(t *testing.T) {
	t.Parallel()
	tn, other := newTenant(t), newTenant(t)
	ch := createChannel(t, tn, emailChannel(t, tn, false))
	r := askChannel(t, tn.CustomerID, ch.ChannelID)
	if !r.Exists || r.ChannelID != ch.ChannelID || r.Kind != "email" || r.EmailAddress != *ch.EmailAddress || r.IsDeleted || r.Name != ch.Name {
		t.Fatalf("lookup %+v", r)
	}
	if r := askChannel(t, other.CustomerID, ch.ChannelID); r.Exists {
		t.Fatalf("another customer's channel: %+v", r)
	}
	if r := askChannel(t, tn.CustomerID, 999999999); r.Exists {
		t.Fatalf("unknown channel: %+v", r)
	}
	wantStatus(t, client(t).Do(http.MethodDelete, fmt.Sprintf("/api/Channels/%d", ch.ChannelID), tn.AdminToken, nil), http.StatusNoContent, nil)
	if r := askChannel(t, tn.CustomerID, ch.ChannelID); !r.Exists || !r.IsDeleted {
		t.Fatalf("deleted channel: %+v", r)
	}

	// channel.created then channel.deleted, for this customer, through the
	// outbox relay.
	var seen []string
	eventually(t, 10*time.Second, "both channel events", func() bool {
		seen = nil
		for _, typ := range []string{contracts.EventChannelCreated, contracts.EventChannelDeleted} {
			for _, data := range backends.Messages(t, contracts.StreamEvents, contracts.EventSubject(typ)) {
				var ev contracts.Event[contracts.ChannelChanged]
				if json.Unmarshal(data, &ev) == nil && ev.CustomerID == tn.CustomerID && ev.Data.ChannelID == ch.ChannelID {
					seen = append(seen, ev.Type)
				}
			}
		}
		return len(seen) == 2
	})
	if seen[0] != contracts.EventChannelCreated || seen[1] != contracts.EventChannelDeleted {
		t.Fatalf("events %v", seen)
	}
}
