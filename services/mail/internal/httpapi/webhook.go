package httpapi

import (
	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/apperr"
)

// Webhook processes the provider's notifications. (Being written on branch
// mail-webhook.)
type Webhook interface{}

func (h *Handlers) webhookValidate(c *gin.Context) error {
	return apperr.E(apperr.Unavailable, "not yet")
}

func (h *Handlers) webhookNotify(c *gin.Context) error {
	return apperr.E(apperr.Unavailable, "not yet")
}
