// Package httpapi is the HTTP layer of the auth service: it decodes requests,
// calls the domain and maps results to response types.
package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/services/auth/internal/auth"
)

// Handlers serve the auth routes.
type Handlers struct {
	svc *auth.Service
	s   *httpserver.Server
}

// New returns the handlers.
func New(svc *auth.Service, s *httpserver.Server) *Handlers { return &Handlers{svc: svc, s: s} }

type loginRequest struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

type tokenResponse struct {
	AccessToken string `json:"accessToken"`
	TokenType   string `json:"tokenType"`
	ExpiresIn   int    `json:"expiresIn"`
	ExpiresAt   string `json:"expiresAt"`
}

func (h *Handlers) login(c *gin.Context) error {
	var req loginRequest
	if err := httpserver.BindJSON(c, &req); err != nil {
		return err
	}
	t, err := h.svc.Login(c.Request.Context(), req.Email, req.Password, c.ClientIP())
	if err != nil {
		return err
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusOK, tokenResponse{AccessToken: t.Raw, TokenType: "Bearer",
		ExpiresIn: int(t.TTL / time.Second), ExpiresAt: t.ExpiresAt.UTC().Format(time.RFC3339)})
	return nil
}

func (h *Handlers) logout(c *gin.Context) error {
	p, err := authn.Must(c.Request.Context())
	if err != nil {
		return err
	}
	if err := h.svc.Logout(c.Request.Context(), p); err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	return nil
}

type customerResponse struct {
	CustomerID int64  `json:"customerID"`
	Name       string `json:"name"`
	CreatedAt  string `json:"createdAt"`
}

type accountResponse struct {
	AccountID int64  `json:"accountID"`
	Email     string `json:"email"`
	Name      string `json:"name"`
	Role      string `json:"role"`
	CreatedAt string `json:"createdAt"`
	Available bool   `json:"available"`
	Language  string `json:"language,omitempty"`
}

type meResponse struct {
	Customer customerResponse `json:"customer"`
	Account  accountResponse  `json:"account"`
}

func toAccount(a auth.Account) accountResponse {
	return accountResponse{AccountID: a.ID, Email: a.Email, Name: a.Name, Role: a.Role,
		CreatedAt: a.CreatedAt.UTC().Format(time.RFC3339), Available: a.Available, Language: a.Language}
}

// toMe is GET /api/Customers/me's answer; appendMe writes its JSON.
func toMe(cu auth.Customer, a auth.Account) meResponse {
	return meResponse{
		Customer: customerResponse{CustomerID: cu.ID, Name: cu.Name, CreatedAt: cu.CreatedAt.UTC().Format(time.RFC3339)},
		Account:  toAccount(a),
	}
}

func (h *Handlers) me(c *gin.Context) error {
	p, err := authn.Must(c.Request.Context())
	if err != nil {
		return err
	}
	cu, a, err := h.svc.Me(c.Request.Context(), p)
	if err != nil {
		return err
	}
	// As c.JSON(http.StatusOK, toMe(cu, a)) answers (content type, status,
	// bytes), see mejson.go.
	c.Data(http.StatusOK, "application/json; charset=utf-8", appendMe(make([]byte, 0, 320), cu, a))
	return nil
}

type forgotRequest struct {
	Email string `json:"email"`
}

func (h *Handlers) forgotPassword(c *gin.Context) error {
	var req forgotRequest
	if err := httpserver.BindJSON(c, &req); err != nil {
		return err
	}
	if err := h.svc.ForgotPassword(c.Request.Context(), req.Email); err != nil {
		return err
	}
	c.Status(http.StatusAccepted)
	return nil
}

type resetRequest struct {
	Token       string `json:"token"`
	NewPassword string `json:"newPassword"`
}

func (h *Handlers) resetPassword(c *gin.Context) error {
	var req resetRequest
	if err := httpserver.BindJSON(c, &req); err != nil {
		return err
	}
	if err := h.svc.ResetPassword(c.Request.Context(), req.Token, req.NewPassword); err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	return nil
}

func (h *Handlers) jwks(c *gin.Context) {
	c.Header("Cache-Control", "public, max-age=300")
	c.JSON(http.StatusOK, h.svc.Signer().JWKS())
}

type createAccountRequest struct {
	Email    string `json:"email"`
	Name     string `json:"name"`
	Role     string `json:"role"`
	Password string `json:"password"`
	Language string `json:"language"`
}

func (h *Handlers) createAccount(c *gin.Context) error {
	p, err := authn.Must(c.Request.Context())
	if err != nil {
		return err
	}
	var req createAccountRequest
	if err := httpserver.BindJSON(c, &req); err != nil {
		return err
	}
	a, err := h.svc.CreateAccount(c.Request.Context(), p, auth.NewAccount{Email: req.Email, Name: req.Name, Role: req.Role,
		Password: req.Password, Language: req.Language})
	if err != nil {
		return err
	}
	c.Header("Location", "/api/Accounts/"+strconv.FormatInt(a.ID, 10))
	c.JSON(http.StatusCreated, toAccount(a))
	return nil
}

func (h *Handlers) listAccounts(c *gin.Context) error {
	p, err := authn.Must(c.Request.Context())
	if err != nil {
		return err
	}
	q := httpserver.NewQuery(c)
	pg := q.Page()
	if err := q.Err(); err != nil {
		return err
	}
	items, total, err := h.svc.ListAccounts(c.Request.Context(), p, pg.Offset(), pg.Size)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, paging.NewEnvelope(paging.Map(items, toAccount), total, pg))
	return nil
}

func (h *Handlers) getAccount(c *gin.Context) error {
	p, err := authn.Must(c.Request.Context())
	if err != nil {
		return err
	}
	id, err := httpserver.PathID(c)
	if err != nil {
		return err
	}
	a, err := h.svc.GetAccount(c.Request.Context(), p, id)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, toAccount(a))
	return nil
}

func (h *Handlers) deleteAccount(c *gin.Context) error {
	p, err := authn.Must(c.Request.Context())
	if err != nil {
		return err
	}
	id, err := httpserver.PathID(c)
	if err != nil {
		return err
	}
	if err := h.svc.DeleteAccount(c.Request.Context(), p, id); err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	return nil
}

type availabilityRequest struct {
	// A pointer, so a missing value is told apart from false.
	Available *bool `json:"available"`
}

func (h *Handlers) setAvailability(c *gin.Context) error {
	p, err := authn.Must(c.Request.Context())
	if err != nil {
		return err
	}
	var req availabilityRequest
	if err := httpserver.BindJSON(c, &req); err != nil {
		return err
	}
	if req.Available == nil {
		return apperr.Field("available", "is required", "the request has invalid fields")
	}
	if err := h.svc.SetAvailability(c.Request.Context(), p, *req.Available); err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	return nil
}
