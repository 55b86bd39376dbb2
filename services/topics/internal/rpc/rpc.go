// Package rpc answers the topics lookups other services make over NATS
// request/reply (queue group contracts.QueueTopics).
package rpc

import (
	"context"

	"github.com/nats-io/nats.go"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/services/topics/internal/topics"
)

// Serve subscribes the four responders. On error the ones already made are
// unsubscribed again; the caller drains the returned ones on shutdown.
func Serve(bus *natsbus.Bus, svc *topics.Service) (subs []*nats.Subscription, err error) {
	defer func() {
		if err != nil {
			for _, s := range subs {
				_ = s.Unsubscribe()
			}
			subs = nil
		}
	}()
	add := func(s *nats.Subscription, err error) error {
		if err == nil {
			subs = append(subs, s)
		}
		return err
	}
	if err = add(natsbus.Serve(bus, contracts.RPCTopicNames, contracts.QueueTopics,
		func(ctx context.Context, req contracts.TopicNamesRequest) (contracts.TopicNamesReply, error) {
			names, err := svc.TopicNames(ctx, req.CustomerID, req.TopicIDs)
			return contracts.TopicNamesReply{Names: names}, err
		})); err != nil {
		return subs, err
	}
	if err = add(natsbus.Serve(bus, contracts.RPCTopicsAll, contracts.QueueTopics,
		func(ctx context.Context, req contracts.TopicsAllRequest) (contracts.TopicsAllReply, error) {
			ts, err := svc.AllTopics(ctx, req.CustomerID)
			return contracts.TopicsAllReply{Topics: paging.Map(ts, func(t topics.Topic) contracts.TopicSummary {
				return contracts.TopicSummary{TopicID: t.ID, Name: t.Name, Description: t.Description}
			})}, err
		})); err != nil {
		return subs, err
	}
	if err = add(natsbus.Serve(bus, contracts.RPCTopicDocuments, contracts.QueueTopics,
		func(ctx context.Context, req contracts.TopicDocumentsRequest) (contracts.TopicDocumentsReply, error) {
			ds, err := svc.LinkedDocuments(ctx, req.CustomerID, req.TopicIDs, req.Limit)
			return contracts.TopicDocumentsReply{Documents: paging.Map(ds, func(d topics.LinkedDocument) contracts.LinkedDocument {
				return contracts.LinkedDocument{DocumentID: d.DocumentID, TopicID: d.TopicID, Title: d.Title,
					Content: d.Content, RelevanceScore: d.RelevanceScore}
			})}, err
		})); err != nil {
		return subs, err
	}
	err = add(natsbus.Serve(bus, contracts.RPCTopicActions, contracts.QueueTopics,
		func(ctx context.Context, req contracts.TopicActionsRequest) (contracts.TopicActionsReply, error) {
			as, err := svc.ActiveActions(ctx, req.CustomerID, req.TopicID)
			return contracts.TopicActionsReply{Actions: paging.Map(as, func(a topics.LinkedAction) contracts.LinkedAction {
				return contracts.LinkedAction{TopicActionID: a.TopicActionID, ActionID: a.ActionID, Name: a.Name,
					HookName: a.HookName, Priority: a.Priority}
			})}, err
		}))
	return subs, err
}
