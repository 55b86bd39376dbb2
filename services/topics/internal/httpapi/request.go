package httpapi

import (
	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/authn"
)

// customer returns the caller's customer id (the tenant every call is
// scoped to).
func customer(c *gin.Context) (int64, error) {
	p, err := authn.Must(c.Request.Context())
	if err != nil {
		return 0, err
	}
	return p.CustomerID, nil
}
