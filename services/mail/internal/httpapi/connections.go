package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/httpcrud"
	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/services/mail/internal/mail"
)

// Connections is what the ProviderConnections API calls of the domain.
type Connections interface {
	StartConnection(ctx context.Context, customerID, accountID int64, in mail.ConnectionInput) (mail.StartedConnection, error)
	ListConnections(ctx context.Context, customerID int64, p paging.Page) ([]mail.Connection, int, error)
	Connection(ctx context.Context, customerID, id int64) (mail.Connection, error)
	DeleteConnection(ctx context.Context, customerID, id int64) error
	Callback(ctx context.Context, in mail.CallbackInput) (mail.CallbackResult, error)
}

type connectionRequest struct {
	Provider  *string `json:"provider"`
	LoginHint *string `json:"loginHint"`
}

type connectionResponse struct {
	ConnectionID     int64      `json:"connectionID"`
	CustomerID       int64      `json:"customerID"`
	Provider         string     `json:"provider"`
	Status           string     `json:"status"`
	ProviderTenantID *string    `json:"providerTenantID"`
	SignedInAs       *string    `json:"signedInAs"`
	LastError        *string    `json:"lastError"`
	DateCreated      time.Time  `json:"dateCreated"`
	DateConnected    *time.Time `json:"dateConnected"`
	// AuthorizationURL is set in the answer of a start only.
	AuthorizationURL string `json:"authorizationUrl,omitempty"`
}

func toConnection(c mail.Connection) connectionResponse {
	return connectionResponse{ConnectionID: c.ID, CustomerID: c.CustomerID, Provider: c.Provider, Status: c.Status,
		ProviderTenantID: orNull(c.TenantID), SignedInAs: orNull(c.SignedInAs), LastError: orNull(c.LastError),
		DateCreated: c.CreatedAt.UTC(), DateConnected: utc(c.ConnectedAt)}
}

func (h *Handlers) startConnection(c *gin.Context) error {
	p, err := authn.Must(c.Request.Context())
	if err != nil {
		return err
	}
	var req connectionRequest
	if c.Request.ContentLength != 0 {
		if err := httpserver.BindJSON(c, &req); err != nil {
			return err
		}
	}
	var in mail.ConnectionInput
	if req.Provider != nil {
		in.Provider = *req.Provider
	}
	if req.LoginHint != nil {
		in.LoginHint = *req.LoginHint
	}
	started, err := h.connections.StartConnection(c.Request.Context(), p.CustomerID, p.AccountID, in)
	if err != nil {
		return err
	}
	body := toConnection(started.Connection)
	body.AuthorizationURL = started.AuthorizationURL
	c.Header("Cache-Control", "no-store")
	httpcrud.Created(c, "/api/ProviderConnections", started.ID, body)
	return nil
}

func (h *Handlers) listConnections(c *gin.Context) error {
	return httpcrud.ListPage(c, httpcrud.NoFilter, httpcrud.Unfiltered(h.connections.ListConnections), toConnection)
}

func (h *Handlers) getConnection(c *gin.Context) error {
	return httpcrud.GetOne(c, h.connections.Connection, toConnection)
}

func (h *Handlers) deleteConnection(c *gin.Context) error {
	return httpcrud.DeleteOne(c, h.connections.DeleteConnection)
}

// consoleConnectionsPage is the console's page of the connections, where a
// browser's connect flow ends. A fixed relative path on the platform's own
// origin: nothing of the request is used to build the redirect but the
// attempt's connection id (a number the platform made) and an error code of
// a fixed list, so the callback can redirect nowhere else (no open
// redirect) and carries no provider text to the page.
const consoleConnectionsPage = "/admin/connections"

// callbackCodes are the error codes a redirect to the console may carry;
// any other is reported as internal.
var callbackCodes = map[apperr.Code]bool{
	apperr.Invalid: true, apperr.NotFound: true, apperr.Conflict: true, apperr.RateLimited: true,
	apperr.Unavailable: true, apperr.Internal: true,
}

// consoleOutcome is the console address of a finished connect flow:
// code "" is success.
func consoleOutcome(connectionID int64, code apperr.Code) string {
	q := url.Values{}
	if connectionID > 0 {
		q.Set("connection", strconv.FormatInt(connectionID, 10))
	}
	if code == "" {
		q.Set("outcome", "connected")
	} else {
		if !callbackCodes[code] {
			code = apperr.Internal
		}
		q.Set("outcome", "error")
		q.Set("code", string(code))
	}
	return consoleConnectionsPage + "?" + q.Encode()
}

// connectionCallback is the redirect URI registered on the app: the
// browser comes back from Microsoft with the sign-in's or the consent's
// answer, without a platform token. The sign-in's answer is redirected on
// to admin consent. The consent's ends with the connected connection (200)
// and every failure with a problem, for an API client; a browser's
// navigation (Accept ranks text/html above JSON) is sent on instead (303)
// to the console's connections page with the outcome in the query.
func (h *Handlers) connectionCallback(c *gin.Context) error {
	// The URL carries a code and a state: keep it out of caches and out of
	// the Referer of whatever the browser loads next.
	c.Header("Cache-Control", "no-store")
	c.Header("Referrer-Policy", "no-referrer")
	browser := httpserver.PrefersHTML(c.GetHeader("Accept"))
	res, err := h.callback(c)
	if err != nil {
		if !browser {
			return err
		}
		redirect(c, http.StatusSeeOther, consoleOutcome(res.ConnectionID, h.s.Outcome(c, err)))
		return nil
	}
	if res.Redirect != "" {
		redirect(c, http.StatusFound, res.Redirect)
		return nil
	}
	if browser {
		redirect(c, http.StatusSeeOther, consoleOutcome(res.Connection.ID, ""))
		return nil
	}
	c.JSON(http.StatusOK, toConnection(*res.Connection))
	return nil
}

// redirect answers without a body: the browser follows the Location.
func redirect(c *gin.Context, status int, location string) {
	c.Header("Location", location)
	c.Status(status)
}

func (h *Handlers) callback(c *gin.Context) (mail.CallbackResult, error) {
	// The one parser of every route: a parameter given twice (a second
	// state or tenant slipped into the URL) is a 400.
	q := httpserver.NewQuery(c)
	in := mail.CallbackInput{
		Code: q.Get("code"), State: q.Get("state"), Error: q.Get("error"), ErrorDescription: q.Get("error_description"),
		Tenant: q.Get("tenant"), AdminConsent: q.Get("admin_consent"), Scope: q.Get("scope")}
	if err := q.Err(); err != nil {
		return mail.CallbackResult{}, err
	}
	return h.connections.Callback(c.Request.Context(), in)
}
