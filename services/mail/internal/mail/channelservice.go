package mail

import (
	"context"
	"log/slog"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/paging"
)

// ChannelStore is what the channel and folder use cases need. Every method
// is scoped to customerID (another customer's ids are NotFound); writes to
// a deleted channel are NotFound. Channel changes write their events with
// them; changes that make a subscription wrong retire it in the same
// transaction.
type ChannelStore interface {
	ListChannels(ctx context.Context, customerID int64, f ChannelFilter, p paging.Page) ([]Channel, int, error)
	Channel(ctx context.Context, customerID, id int64) (Channel, error)
	CreateChannel(ctx context.Context, customerID int64, in ChannelInput) (Channel, error)
	UpdateChannel(ctx context.Context, customerID, id int64, in ChannelInput) (Channel, error)
	DeleteChannel(ctx context.Context, customerID, id int64) (Channel, error)
	ListFolders(ctx context.Context, customerID, channelID int64, p paging.Page) ([]Folder, int, error)
	Folder(ctx context.Context, customerID, channelID, folderID int64) (Folder, error)
	CreateFolder(ctx context.Context, customerID, channelID int64, in FolderInput) (Folder, error)
	UpdateFolder(ctx context.Context, customerID, channelID, folderID int64, in FolderInput) (Folder, error)
	DeleteFolder(ctx context.Context, customerID, channelID, folderID int64) error
	// TenantConnected reports whether tenantID is connected to the customer.
	TenantConnected(ctx context.Context, customerID int64, tenantID string) (bool, error)
}

// ChannelSyncer brings a channel's provider subscriptions in line with its
// switches: it creates the ones that should exist and deletes the retired
// ones at the provider.
type ChannelSyncer interface {
	SyncChannel(ctx context.Context, customerID, channelID int64) ([]FolderOutcome, error)
}

// ChannelService is the channel and folder use cases.
type ChannelService struct {
	store ChannelStore
	sync  ChannelSyncer
	log   *slog.Logger
}

// NewChannelService returns the channel use cases on store; after each
// change it syncs the channel's subscriptions with sync.
func NewChannelService(store ChannelStore, sync ChannelSyncer, log *slog.Logger) *ChannelService {
	return &ChannelService{store: store, sync: sync, log: log}
}

// synced syncs a changed channel's subscriptions. The change has committed
// and is the answer whatever the provider says: what fails here stays for
// the renewal job, which retries it within a minute.
func (s *ChannelService) synced(ctx context.Context, customerID, channelID int64) {
	if _, err := s.sync.SyncChannel(ctx, customerID, channelID); err != nil {
		s.log.WarnContext(ctx, "channel subscriptions left to the renewal job", "channelID", channelID, "error", err.Error())
	}
}

// ListChannels pages through the customer's channels.
func (s *ChannelService) ListChannels(ctx context.Context, customerID int64, f ChannelFilter, p paging.Page) ([]Channel, int, error) {
	return s.store.ListChannels(ctx, customerID, f, p)
}

// Channel returns one channel, deleted or not.
func (s *ChannelService) Channel(ctx context.Context, customerID, id int64) (Channel, error) {
	return s.store.Channel(ctx, customerID, id)
}

// CreateChannel adds a channel; a new e-mail channel gets the inbox folder
// unless the input lists folders.
func (s *ChannelService) CreateChannel(ctx context.Context, customerID int64, in ChannelInput) (Channel, error) {
	in, err := in.Normalize(true)
	if err != nil {
		return Channel{}, err
	}
	if err := s.checkTenant(ctx, customerID, in); err != nil {
		return Channel{}, err
	}
	c, err := s.store.CreateChannel(ctx, customerID, in)
	if err == nil && c.Subscribable() {
		s.synced(ctx, customerID, c.ID)
	}
	return c, err
}

// UpdateChannel replaces a live channel's fields (not its kind or folders).
func (s *ChannelService) UpdateChannel(ctx context.Context, customerID, id int64, in ChannelInput) (Channel, error) {
	in, err := in.Normalize(false)
	if err != nil {
		return Channel{}, err
	}
	if err := s.checkTenant(ctx, customerID, in); err != nil {
		return Channel{}, err
	}
	c, err := s.store.UpdateChannel(ctx, customerID, id, in)
	if err == nil {
		s.synced(ctx, customerID, c.ID)
	}
	return c, err
}

// DeleteChannel soft-deletes a channel and deletes its subscriptions at the
// provider.
func (s *ChannelService) DeleteChannel(ctx context.Context, customerID, id int64) error {
	c, err := s.store.DeleteChannel(ctx, customerID, id)
	if err == nil {
		s.synced(ctx, customerID, c.ID)
	}
	return err
}

// checkTenant refuses a microsoft365 channel whose tenant is not connected
// to the customer (issue 22: a tenant is the customer's only once its
// Microsoft admin signed in and consented through /api/ProviderConnections).
func (s *ChannelService) checkTenant(ctx context.Context, customerID int64, in ChannelInput) error {
	if in.Provider != ProviderMicrosoft365 {
		return nil
	}
	ok, err := s.store.TenantConnected(ctx, customerID, in.ProviderTenantID)
	if err != nil {
		return err
	}
	if !ok {
		return apperr.Field("providerTenantID", "must be the tenant id of a Microsoft 365 tenant connected to your customer (see /api/ProviderConnections)",
			"the Microsoft 365 tenant is not connected to your customer")
	}
	return nil
}

// ListFolders pages through a channel's folders.
func (s *ChannelService) ListFolders(ctx context.Context, customerID, channelID int64, p paging.Page) ([]Folder, int, error) {
	return s.store.ListFolders(ctx, customerID, channelID, p)
}

// Folder returns one folder of a channel.
func (s *ChannelService) Folder(ctx context.Context, customerID, channelID, folderID int64) (Folder, error) {
	return s.store.Folder(ctx, customerID, channelID, folderID)
}

// CreateFolder adds a folder to a live e-mail channel.
func (s *ChannelService) CreateFolder(ctx context.Context, customerID, channelID int64, in FolderInput) (Folder, error) {
	in, err := in.Normalize()
	if err != nil {
		return Folder{}, err
	}
	f, err := s.store.CreateFolder(ctx, customerID, channelID, in)
	if err == nil {
		s.synced(ctx, customerID, channelID)
	}
	return f, err
}

// UpdateFolder replaces a folder of a live channel.
func (s *ChannelService) UpdateFolder(ctx context.Context, customerID, channelID, folderID int64, in FolderInput) (Folder, error) {
	in, err := in.Normalize()
	if err != nil {
		return Folder{}, err
	}
	f, err := s.store.UpdateFolder(ctx, customerID, channelID, folderID, in)
	if err == nil {
		s.synced(ctx, customerID, channelID)
	}
	return f, err
}

// DeleteFolder removes a folder and deletes its subscription at the
// provider.
func (s *ChannelService) DeleteFolder(ctx context.Context, customerID, channelID, folderID int64) error {
	err := s.store.DeleteFolder(ctx, customerID, channelID, folderID)
	if err == nil {
		s.synced(ctx, customerID, channelID)
	}
	return err
}
