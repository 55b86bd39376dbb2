// Package lookup asks the services the tickets context depends on over NATS
// request/reply: the mail context for channels, topics for topic names and
// actions, auth for accounts. A service that does not answer is an
// Unavailable error (503); nothing is guessed.
package lookup

import (
	"context"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
)

// Client asks over one bus.
type Client struct{ bus *natsbus.Bus }

// New returns a client on bus.
func New(bus *natsbus.Bus) *Client { return &Client{bus: bus} }

// Channel returns the customer's channel; Exists is false for an unknown
// id or another customer's channel.
func (c *Client) Channel(ctx context.Context, customerID, channelID int64) (contracts.ChannelReply, error) {
	return natsbus.Request[contracts.ChannelRequest, contracts.ChannelReply](ctx, c.bus, contracts.RPCChannel,
		contracts.ChannelRequest{CustomerID: customerID, ChannelID: channelID})
}

// TopicNames maps the customer's existing topics among ids to their names;
// unknown and deleted ids are absent.
func (c *Client) TopicNames(ctx context.Context, customerID int64, ids []int64) (map[int64]string, error) {
	reply, err := natsbus.Request[contracts.TopicNamesRequest, contracts.TopicNamesReply](ctx, c.bus, contracts.RPCTopicNames,
		contracts.TopicNamesRequest{CustomerID: customerID, TopicIDs: ids})
	return reply.Names, err
}

// TopicActions lists the active actions of a topic by priority.
func (c *Client) TopicActions(ctx context.Context, customerID, topicID int64) ([]contracts.LinkedAction, error) {
	reply, err := natsbus.Request[contracts.TopicActionsRequest, contracts.TopicActionsReply](ctx, c.bus, contracts.RPCTopicActions,
		contracts.TopicActionsRequest{CustomerID: customerID, TopicID: topicID})
	return reply.Actions, err
}

// Accounts returns the customer's enabled accounts among ids, or with no
// ids every admin and agent account (the people tickets go to).
func (c *Client) Accounts(ctx context.Context, customerID int64, ids ...int64) ([]contracts.AccountSummary, error) {
	reply, err := natsbus.Request[contracts.AccountsRequest, contracts.AccountsReply](ctx, c.bus, contracts.RPCAccounts,
		contracts.AccountsRequest{CustomerID: customerID, AccountIDs: ids})
	return reply.Accounts, err
}

// TopicDocuments lists the documents linked to the customer's live topics
// among topicIDs, each once, most relevant first, at most limit.
func (c *Client) TopicDocuments(ctx context.Context, customerID int64, topicIDs []int64, limit int) ([]contracts.LinkedDocument, error) {
	reply, err := natsbus.Request[contracts.TopicDocumentsRequest, contracts.TopicDocumentsReply](ctx, c.bus, contracts.RPCTopicDocuments,
		contracts.TopicDocumentsRequest{CustomerID: customerID, TopicIDs: topicIDs, Limit: limit})
	return reply.Documents, err
}

// TopicsAll lists every live topic of the customer with its description.
func (c *Client) TopicsAll(ctx context.Context, customerID int64) ([]contracts.TopicSummary, error) {
	reply, err := natsbus.Request[contracts.TopicsAllRequest, contracts.TopicsAllReply](ctx, c.bus, contracts.RPCTopicsAll,
		contracts.TopicsAllRequest{CustomerID: customerID})
	return reply.Topics, err
}
