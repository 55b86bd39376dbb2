// Package rpc answers the topics lookups other services make over NATS
// request/reply (queue group contracts.QueueTopics).
package rpc

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/services/topics/internal/topics"
)

// Lookups is what the responders call of the topics service.
type Lookups interface {
	TopicNames(ctx context.Context, customerID int64, ids []int64) (map[int64]string, error)
	AllTopics(ctx context.Context, customerID int64) ([]topics.Topic, error)
	LinkedDocuments(ctx context.Context, customerID int64, topicIDs []int64, limit int) ([]topics.LinkedDocument, error)
	ActiveActions(ctx context.Context, customerID, topicID int64) ([]topics.LinkedAction, error)
}

// Serve subscribes the four responders. The bus keeps the subscriptions and
// drains them at shutdown (also after an error here).
func Serve(bus *natsbus.Bus, svc Lookups) error {
	var errs []error
	add := func(_ *nats.Subscription, err error) { errs = append(errs, err) }
	add(natsbus.Serve(bus, contracts.RPCTopicNames, contracts.QueueTopics,
		func(ctx context.Context, req contracts.TopicNamesRequest) (contracts.TopicNamesReply, error) {
			names, err := svc.TopicNames(ctx, req.CustomerID, req.TopicIDs)
			return contracts.TopicNamesReply{Names: names}, err
		}))
	add(natsbus.Serve(bus, contracts.RPCTopicsAll, contracts.QueueTopics,
		func(ctx context.Context, req contracts.TopicsAllRequest) (contracts.TopicsAllReply, error) {
			ts, err := svc.AllTopics(ctx, req.CustomerID)
			return contracts.TopicsAllReply{Topics: paging.Map(ts, func(t topics.Topic) contracts.TopicSummary {
				return contracts.TopicSummary{TopicID: t.ID, Name: t.Name, Description: t.Description}
			})}, err
		}))
	add(natsbus.Serve(bus, contracts.RPCTopicDocuments, contracts.QueueTopics,
		func(ctx context.Context, req contracts.TopicDocumentsRequest) (contracts.TopicDocumentsReply, error) {
			ds, err := svc.LinkedDocuments(ctx, req.CustomerID, req.TopicIDs, req.Limit)
			return contracts.TopicDocumentsReply{Documents: paging.Map(ds, func(d topics.LinkedDocument) contracts.LinkedDocument {
				return contracts.LinkedDocument{DocumentID: d.DocumentID, TopicID: d.TopicID, Title: d.Title,
					Content: d.Content, RelevanceScore: d.RelevanceScore}
			})}, err
		}))
	add(natsbus.Serve(bus, contracts.RPCTopicActions, contracts.QueueTopics,
		func(ctx context.Context, req contracts.TopicActionsRequest) (contracts.TopicActionsReply, error) {
			as, err := svc.ActiveActions(ctx, req.CustomerID, req.TopicID)
			return contracts.TopicActionsReply{Actions: paging.Map(as, func(a topics.LinkedAction) contracts.LinkedAction {
				return contracts.LinkedAction{TopicActionID: a.TopicActionID, ActionID: a.ActionID, Name: a.Name,
					HookName: a.HookName, Priority: a.Priority, RequiresConfirmation: a.RequiresConfirmation}
			})}, err
		}))
	return errors.Join(errs...)
}
