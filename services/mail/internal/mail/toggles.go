package mail

import (
	"context"
)

// Subscribe switches automatic retrieval on for a live e-mail channel and
// all its folders (one transaction, with its channel.updated event), then
// syncs its subscriptions (spec sections 3 and 4). A channel that does not
// exist for the customer, is deleted, or has no mailbox (not an e-mail
// channel) is NotFound. The switch is committed whatever the provider
// says: a provider failure is a "failed" folder outcome in a 200 answer,
// and the renewal job retries it.
func (s *SubscriptionService) Subscribe(ctx context.Context, customerID, channelID int64) (ToggleResult, error) {
	return s.toggle(ctx, customerID, channelID, true)
}

// Unsubscribe switches automatic retrieval off for a live e-mail channel and
// all its folders, retiring their subscriptions in the same transaction, then
// deletes them at the provider. Folders whose subscription was deleted are
// "unsubscribed"; a deletion that failed is "failed" and left to the renewal
// job. NotFound as for Subscribe.
func (s *SubscriptionService) Unsubscribe(ctx context.Context, customerID, channelID int64) (ToggleResult, error) {
	return s.toggle(ctx, customerID, channelID, false)
}

func (s *SubscriptionService) toggle(ctx context.Context, customerID, channelID int64, on bool) (ToggleResult, error) {
	sw, err := s.store.SetAutoRetrieve(ctx, customerID, channelID, on)
	if err != nil {
		return ToggleResult{}, err
	}
	outcomes, deleted, err := s.sync(ctx, customerID, channelID)
	if err != nil {
		// The switch has committed: answer it, with every folder left to
		// the renewal job.
		s.log.WarnContext(ctx, "channel subscriptions left to the renewal job", "channelID", channelID, "error", err.Error())
		outcomes = make([]FolderOutcome, 0, len(sw.Folders))
		for _, f := range sw.Folders {
			outcomes = append(outcomes, failedOutcome(f, err))
		}
	}
	for i, o := range outcomes {
		id, ok := sw.Retired[o.FolderID]
		if !ok || o.Outcome != OutcomeNone && o.Outcome != OutcomeSkipped {
			continue
		}
		derr, tried := deleted[id]
		switch {
		case tried && derr == nil:
			outcomes[i].Outcome = OutcomeUnsubscribed
		case tried:
			outcomes[i].Outcome, outcomes[i].Error = OutcomeFailed, errorText(derr)
		}
	}
	return ToggleResult{Channel: sw.Channel, Folders: outcomes}, nil
}
