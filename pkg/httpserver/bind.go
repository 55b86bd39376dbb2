package httpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/paging"
)

// BindJSON decodes the JSON request body into dst. Field names match
// case-insensitively (encoding/json semantics). Every client mistake becomes a
// 4xx apperr: wrong content type 415, too large 413, malformed or mistyped 400.
func BindJSON(c *gin.Context, dst any) error {
	if err := requireJSON(c.Request); err != nil {
		return err
	}
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return apperr.E(apperr.TooLarge, "the request body exceeds %d bytes", mbe.Limit)
		}
		return apperr.Wrap(apperr.Invalid, err, "the request body could not be read")
	}
	return DecodeJSON(body, dst)
}

// DecodeJSON decodes one JSON value with the same error mapping as BindJSON.
// Text that PostgreSQL cannot store is refused here, for every handler: bytes
// that are not UTF-8, and U+0000 in any string value or field name (a 400
// naming each by its JSON path).
func DecodeJSON(body []byte, dst any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return apperr.E(apperr.Invalid, "a JSON request body is required")
	}
	// encoding/json would quietly turn invalid bytes into U+FFFD and the
	// damaged text would be stored; JSON text must be UTF-8 (RFC 8259).
	if !utf8.Valid(body) {
		return apperr.E(apperr.Invalid, "the request body is not valid UTF-8")
	}
	if err := refuseNUL(body); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return apperr.E(apperr.Invalid, "the request body must hold exactly one JSON value")
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); err != io.EOF {
		return apperr.E(apperr.Invalid, "the request body must hold exactly one JSON value")
	}
	return nil
}

func jsonError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return apperr.E(apperr.Invalid, "malformed JSON at byte %d", syn.Offset)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return apperr.E(apperr.Invalid, "the request body must be a JSON %s", jsonKind(typ.Type.Kind().String()))
		}
		return apperr.Field(field, fmt.Sprintf("must be a %s, not %s", jsonKind(typ.Type.Kind().String()), typ.Value),
			"the request has invalid fields")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return apperr.E(apperr.Invalid, "malformed JSON: unexpected end of input")
	default:
		return apperr.Wrap(apperr.Invalid, err, "malformed JSON")
	}
}

func jsonKind(goKind string) string {
	switch goKind {
	case "int", "int32", "int64", "uint", "uint32", "uint64", "float64", "float32":
		return "number"
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "slice", "array":
		return "array"
	case "map", "struct", "ptr":
		return "object"
	}
	return goKind
}

func requireJSON(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return apperr.E(apperr.UnsupportedType, "Content-Type must be application/json")
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || !(mt == "application/json" || strings.HasSuffix(mt, "+json")) {
		return apperr.E(apperr.UnsupportedType, "Content-Type must be application/json, not %q", ct)
	}
	return nil
}

// PathID parses the :id path segment (PathIDNamed "id").
func PathID(c *gin.Context) (int64, error) { return PathIDNamed(c, "id") }

// PathIDNamed parses a path segment that is an id: a positive integer in
// paging.ParseInt's syntax ("01" and "+1" are not ids), else a 400 naming
// the segment (never a 404, so a client learns its URL is malformed).
func PathIDNamed(c *gin.Context, name string) (int64, error) {
	id, ok := paging.ParseInt(c.Param(name))
	if !ok || id <= 0 {
		return 0, apperr.Field(name, "must be a positive integer without sign or leading zeros",
			"the "+name+" in the path must be a positive integer")
	}
	return id, nil
}
