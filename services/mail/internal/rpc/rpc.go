// Package rpc answers the channel lookups other services make over NATS
// request/reply (queue group contracts.QueueMail).
package rpc

import (
	"context"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/services/mail/internal/mail"
)

// Lookups is what the responders call of the mail service.
type Lookups interface {
	Channel(ctx context.Context, customerID, id int64) (mail.Channel, error)
}

// Serve subscribes the responders. The bus keeps the subscriptions and
// drains them at shutdown.
func Serve(bus *natsbus.Bus, svc Lookups) error {
	_, err := natsbus.Serve(bus, contracts.RPCChannel, contracts.QueueMail,
		func(ctx context.Context, req contracts.ChannelRequest) (contracts.ChannelReply, error) {
			return channel(ctx, svc, req)
		})
	return err
}

// channel answers one lookup: an unknown id, and another customer's, is
// Exists false rather than an error, so callers tell "no such channel" from
// "mail is down".
func channel(ctx context.Context, svc Lookups, req contracts.ChannelRequest) (contracts.ChannelReply, error) {
	if req.CustomerID <= 0 || req.ChannelID <= 0 {
		return contracts.ChannelReply{}, nil
	}
	c, err := svc.Channel(ctx, req.CustomerID, req.ChannelID)
	if apperr.Is(err, apperr.NotFound) {
		return contracts.ChannelReply{}, nil
	}
	if err != nil {
		return contracts.ChannelReply{}, err
	}
	return contracts.ChannelReply{Exists: true, ChannelID: c.ID, Name: c.Name, Kind: c.Kind,
		IsDeleted: c.IsDeleted, EmailAddress: c.EmailAddress}, nil
}
