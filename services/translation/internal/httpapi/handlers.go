// Package httpapi is the HTTP layer of the translation service.
package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/services/translation/internal/translate"
)

// Translator is the domain as the handlers use it.
type Translator interface {
	Translate(ctx context.Context, req translate.Request) (string, error)
	TranslateToHTML(ctx context.Context, req translate.Request) (string, error)
	DetectLanguage(ctx context.Context, country, state, city string) (string, error)
}

// Customers checks that the token's customer still exists.
type Customers interface {
	Require(ctx context.Context, customerID int64) error
}

// Handlers serve the translation routes.
type Handlers struct {
	svc       Translator
	customers Customers
	s         *httpserver.Server
}

// New returns the handlers.
func New(svc Translator, customers Customers, s *httpserver.Server) *Handlers {
	return &Handlers{svc: svc, customers: customers, s: s}
}

// translateRequest is the spec's TranslateRequest; strings only, so a number
// or object is a 400 naming the field.
type translateRequest struct {
	SourceText string `json:"sourceText"`
	// SourceLang is optional: without it the language is detected.
	SourceLang string `json:"sourceLang"`
	TargetLang string `json:"targetLang"`
}

func (h *Handlers) translate(c *gin.Context) error {
	return h.doTranslate(c, h.svc.Translate)
}

func (h *Handlers) translateToHTML(c *gin.Context) error {
	return h.doTranslate(c, h.svc.TranslateToHTML)
}

func (h *Handlers) doTranslate(c *gin.Context, fn func(ctx context.Context, req translate.Request) (string, error)) error {
	var req translateRequest
	if err := httpserver.BindJSON(c, &req); err != nil {
		return err
	}
	customerID, err := h.requireCustomer(c)
	if err != nil {
		return err
	}
	out, err := fn(c.Request.Context(), translate.Request{CustomerID: customerID, SourceText: req.SourceText,
		SourceLang: req.SourceLang, TargetLang: req.TargetLang})
	if err != nil {
		return err
	}
	writeJSONString(c, out)
	return nil
}

func (h *Handlers) detectLanguage(c *gin.Context) error {
	if _, err := h.requireCustomer(c); err != nil {
		return err
	}
	q := httpserver.NewQuery(c)
	country, state, city := q.Get("country"), q.Get("state"), q.Get("city")
	if err := q.Err(); err != nil {
		return err
	}
	lang, err := h.svc.DetectLanguage(c.Request.Context(), country, state, city)
	if err != nil {
		return err
	}
	writeJSONString(c, lang)
	return nil
}

// requireCustomer returns the token's customer once it is known to exist.
func (h *Handlers) requireCustomer(c *gin.Context) (int64, error) {
	p, err := authn.Must(c.Request.Context())
	if err != nil {
		return 0, err
	}
	return p.CustomerID, h.customers.Require(c.Request.Context(), p.CustomerID)
}

// writeJSONString answers with a bare JSON string, as the spec shows. HTML is
// not \u-escaped: the translate-to-html answer stays readable.
func writeJSONString(c *gin.Context, s string) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	c.Data(http.StatusOK, "application/json; charset=utf-8", bytes.TrimRight(buf.Bytes(), "\n"))
}
