// Package httpapi is the HTTP layer of mailingest: it decodes requests,
// calls the domain and maps results to response types whose JSON names are
// the spec's.
package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/httpcrud"
	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/services/mail/internal/mail"
)

// Channels is what the Channels API calls of the domain.
type Channels interface {
	ListChannels(ctx context.Context, customerID int64, f mail.ChannelFilter, p paging.Page) ([]mail.Channel, int, error)
	Channel(ctx context.Context, customerID, id int64) (mail.Channel, error)
	CreateChannel(ctx context.Context, customerID int64, in mail.ChannelInput) (mail.Channel, error)
	UpdateChannel(ctx context.Context, customerID, id int64, in mail.ChannelInput) (mail.Channel, error)
	DeleteChannel(ctx context.Context, customerID, id int64) error
	ListFolders(ctx context.Context, customerID, channelID int64, p paging.Page) ([]mail.Folder, int, error)
	Folder(ctx context.Context, customerID, channelID, folderID int64) (mail.Folder, error)
	CreateFolder(ctx context.Context, customerID, channelID int64, in mail.FolderInput) (mail.Folder, error)
	UpdateFolder(ctx context.Context, customerID, channelID, folderID int64, in mail.FolderInput) (mail.Folder, error)
	DeleteFolder(ctx context.Context, customerID, channelID, folderID int64) error
}

// Handlers serve the mailingest routes.
type Handlers struct {
	channels    Channels
	toggles     Toggles
	webhook     Webhook
	connections Connections
	s           *httpserver.Server
}

// New returns the handlers.
func New(channels Channels, toggles Toggles, webhook Webhook, connections Connections, s *httpserver.Server) *Handlers {
	return &Handlers{channels: channels, toggles: toggles, webhook: webhook, connections: connections, s: s}
}

// ids reads the caller's customer and the path ids named (in order).
func ids(c *gin.Context, names ...string) (customerID int64, out []int64, err error) {
	if customerID, err = httpcrud.Customer(c); err != nil {
		return 0, nil, err
	}
	for _, n := range names {
		id, err := httpserver.PathIDNamed(c, n)
		if err != nil {
			return 0, nil, err
		}
		out = append(out, id)
	}
	return customerID, out, nil
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// ---- Channels ----

type folderRequest struct {
	ExternalFolderID   *string `json:"externalFolderID"`
	DisplayName        *string `json:"displayName"`
	AutoRetrieveEmails *bool   `json:"autoRetrieveEmails"`
}

func (r folderRequest) input() mail.FolderInput {
	var in mail.FolderInput
	if r.ExternalFolderID != nil {
		in.ExternalFolderID = *r.ExternalFolderID
	}
	if r.DisplayName != nil {
		in.DisplayName = *r.DisplayName
	}
	if r.AutoRetrieveEmails != nil {
		in.AutoRetrieveEmails = *r.AutoRetrieveEmails
	}
	return in
}

type channelRequest struct {
	Name               *string          `json:"name"`
	Kind               *string          `json:"kind"`
	EmailAddress       *string          `json:"emailAddress"`
	Provider           *string          `json:"provider"`
	ProviderTenantID   *string          `json:"providerTenantID"`
	AutoRetrieveEmails *bool            `json:"autoRetrieveEmails"`
	Folders            *[]folderRequest `json:"folders"`
}

func (r channelRequest) Input() mail.ChannelInput {
	var in mail.ChannelInput
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	in.Name, in.Kind, in.EmailAddress = str(r.Name), str(r.Kind), str(r.EmailAddress)
	in.Provider, in.ProviderTenantID = str(r.Provider), str(r.ProviderTenantID)
	if r.AutoRetrieveEmails != nil {
		in.AutoRetrieveEmails = *r.AutoRetrieveEmails
	}
	if r.Folders != nil {
		in.Folders = make([]mail.FolderInput, 0, len(*r.Folders))
		for _, f := range *r.Folders {
			in.Folders = append(in.Folders, f.input())
		}
	}
	return in
}

type channelResponse struct {
	ChannelID          int64     `json:"channelID"`
	CustomerID         int64     `json:"customerID"`
	Name               string    `json:"name"`
	Kind               string    `json:"kind"`
	EmailAddress       *string   `json:"emailAddress"`
	Provider           string    `json:"provider"`
	ProviderTenantID   *string   `json:"providerTenantID"`
	AutoRetrieveEmails bool      `json:"autoRetrieveEmails"`
	IsDeleted          bool      `json:"isDeleted"`
	DateCreated        time.Time `json:"dateCreated"`
}

func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func toChannel(c mail.Channel) channelResponse {
	return channelResponse{ChannelID: c.ID, CustomerID: c.CustomerID, Name: c.Name, Kind: c.Kind,
		EmailAddress: orNull(c.EmailAddress), Provider: c.Provider, ProviderTenantID: orNull(c.ProviderTenantID),
		AutoRetrieveEmails: c.AutoRetrieveEmails, IsDeleted: c.IsDeleted, DateCreated: c.CreatedAt.UTC()}
}

type folderResponse struct {
	FolderID                       int64      `json:"folderID"`
	ChannelID                      int64      `json:"channelID"`
	ExternalFolderID               string     `json:"externalFolderID"`
	DisplayName                    string     `json:"displayName"`
	AutoRetrieveEmails             bool       `json:"autoRetrieveEmails"`
	ProviderSubscriptionID         *string    `json:"providerSubscriptionId"`
	ProviderSubscriptionExpiration *time.Time `json:"providerSubscriptionExpiration"`
	LastNotificationAt             *time.Time `json:"lastNotificationAt"`
	LastImportAt                   *time.Time `json:"lastImportAt"`
	DateCreated                    time.Time  `json:"dateCreated"`
	SkippedMessages                int64      `json:"skippedMessages"`
	LastSkipReason                 *string    `json:"lastSkipReason"`
	LastSkipAt                     *time.Time `json:"lastSkipAt"`
}

func toFolder(f mail.Folder) folderResponse {
	return folderResponse{FolderID: f.ID, ChannelID: f.ChannelID, ExternalFolderID: f.ExternalFolderID,
		DisplayName: f.DisplayName, AutoRetrieveEmails: f.AutoRetrieveEmails,
		ProviderSubscriptionID: orNull(f.SubscriptionID), ProviderSubscriptionExpiration: utc(f.SubscriptionExpiration),
		LastNotificationAt: utc(f.LastNotificationAt), LastImportAt: utc(f.LastImportAt), DateCreated: f.CreatedAt.UTC(),
		SkippedMessages: f.SkippedMessages, LastSkipReason: orNull(f.LastSkipReason), LastSkipAt: utc(f.LastSkipAt)}
}

func (h *Handlers) listChannels(c *gin.Context) error {
	return httpcrud.ListPage(c, func(q *httpserver.Query) mail.ChannelFilter {
		var f mail.ChannelFilter
		if k := q.Get("kind"); k != "" {
			switch k {
			case mail.KindEmail, mail.KindWeb, mail.KindAPI:
				f.Kind = &k
			default:
				q.Invalid("kind", "must be email, web or api")
			}
		}
		f.IsDeleted = q.Bool("isDeleted")
		return f
	}, h.channels.ListChannels, toChannel)
}

func (h *Handlers) getChannel(c *gin.Context) error {
	return httpcrud.GetOne(c, h.channels.Channel, toChannel)
}

func (h *Handlers) createChannel(c *gin.Context) error {
	return httpcrud.CreateOne[channelRequest](c, "/api/Channels", h.channels.CreateChannel,
		func(ch mail.Channel) int64 { return ch.ID }, toChannel)
}

func (h *Handlers) updateChannel(c *gin.Context) error {
	return httpcrud.UpdateOne[channelRequest](c, h.channels.UpdateChannel)
}

func (h *Handlers) deleteChannel(c *gin.Context) error {
	return httpcrud.DeleteOne(c, h.channels.DeleteChannel)
}

// ---- Folders ----

func (h *Handlers) listFolders(c *gin.Context) error {
	cid, id, err := ids(c, "id")
	if err != nil {
		return err
	}
	q := httpserver.NewQuery(c)
	pg := q.Page()
	if err := q.Err(); err != nil {
		return err
	}
	items, total, err := h.channels.ListFolders(c.Request.Context(), cid, id[0], pg)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, paging.NewEnvelope(paging.Map(items, toFolder), total, pg))
	return nil
}

func (h *Handlers) getFolder(c *gin.Context) error {
	cid, id, err := ids(c, "id", "folderId")
	if err != nil {
		return err
	}
	f, err := h.channels.Folder(c.Request.Context(), cid, id[0], id[1])
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, toFolder(f))
	return nil
}

func (h *Handlers) createFolder(c *gin.Context) error {
	cid, id, err := ids(c, "id")
	if err != nil {
		return err
	}
	var req folderRequest
	if err := httpserver.BindJSON(c, &req); err != nil {
		return err
	}
	f, err := h.channels.CreateFolder(c.Request.Context(), cid, id[0], req.input())
	if err != nil {
		return err
	}
	c.Header("Location", "/api/Channels/"+strconv.FormatInt(id[0], 10)+"/folders/"+strconv.FormatInt(f.ID, 10))
	c.JSON(http.StatusCreated, toFolder(f))
	return nil
}

func (h *Handlers) updateFolder(c *gin.Context) error {
	cid, id, err := ids(c, "id", "folderId")
	if err != nil {
		return err
	}
	var req folderRequest
	if err := httpserver.BindJSON(c, &req); err != nil {
		return err
	}
	if _, err := h.channels.UpdateFolder(c.Request.Context(), cid, id[0], id[1], req.input()); err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	return nil
}

func (h *Handlers) deleteFolder(c *gin.Context) error {
	cid, id, err := ids(c, "id", "folderId")
	if err != nil {
		return err
	}
	if err := h.channels.DeleteFolder(c.Request.Context(), cid, id[0], id[1]); err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	return nil
}
