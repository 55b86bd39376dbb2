package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/services/mail/internal/mail"
)

// Toggles switch automatic retrieval of an e-mail channel and its folders on
// or off, then sync its provider subscriptions (spec section 3).
type Toggles interface {
	Subscribe(ctx context.Context, customerID, channelID int64) (mail.ToggleResult, error)
	Unsubscribe(ctx context.Context, customerID, channelID int64) (mail.ToggleResult, error)
}

type folderOutcomeResponse struct {
	FolderID                       int64      `json:"folderID"`
	ExternalFolderID               string     `json:"externalFolderID"`
	AutoRetrieveEmails             bool       `json:"autoRetrieveEmails"`
	Outcome                        string     `json:"outcome"`
	ProviderSubscriptionID         *string    `json:"providerSubscriptionId"`
	ProviderSubscriptionExpiration *time.Time `json:"providerSubscriptionExpiration"`
	Error                          *string    `json:"error,omitempty"`
}

type toggleResponse struct {
	ChannelID          int64                   `json:"channelID"`
	AutoRetrieveEmails bool                    `json:"autoRetrieveEmails"`
	Provider           string                  `json:"provider"`
	Folders            []folderOutcomeResponse `json:"folders"`
}

func toToggle(r mail.ToggleResult) toggleResponse {
	return toggleResponse{ChannelID: r.Channel.ID, AutoRetrieveEmails: r.Channel.AutoRetrieveEmails, Provider: r.Channel.Provider,
		Folders: paging.Map(r.Folders, func(o mail.FolderOutcome) folderOutcomeResponse {
			return folderOutcomeResponse{FolderID: o.FolderID, ExternalFolderID: o.ExternalFolderID,
				AutoRetrieveEmails: o.AutoRetrieveEmails, Outcome: o.Outcome, ProviderSubscriptionID: orNull(o.SubscriptionID),
				ProviderSubscriptionExpiration: utc(o.SubscriptionExpiration), Error: orNull(o.Error)}
		})}
}

func (h *Handlers) toggle(c *gin.Context, fn func(context.Context, int64, int64) (mail.ToggleResult, error)) error {
	cid, id, err := ids(c, "id")
	if err != nil {
		return err
	}
	r, err := fn(c.Request.Context(), cid, id[0])
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, toToggle(r))
	return nil
}

func (h *Handlers) subscribe(c *gin.Context) error   { return h.toggle(c, h.toggles.Subscribe) }
func (h *Handlers) unsubscribe(c *gin.Context) error { return h.toggle(c, h.toggles.Unsubscribe) }
