// Package apperr is the one application error type of the platform. Domain and
// store code return *Error with a Code; the HTTP layer maps codes to statuses in
// exactly one place (package httpserver).
package apperr

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Code classifies an error independently of transport.
type Code string

const (
	Invalid         Code = "invalid"
	Unauthorized    Code = "unauthorized"
	Forbidden       Code = "forbidden"
	NotFound        Code = "not_found"
	Conflict        Code = "conflict"
	TooLarge        Code = "too_large"
	UnsupportedType Code = "unsupported_media_type"
	RateLimited     Code = "rate_limited"
	Unavailable     Code = "unavailable"
	Internal        Code = "internal"
)

// Unprocessable is a well-formed request that contradicts an earlier one
// (an Idempotency-Key sent again with another body).
const Unprocessable Code = "unprocessable"

// Error is the application error. Message is safe to show to clients; Err is
// the cause and is only logged.
type Error struct {
	Code    Code
	Message string
	// Fields holds per-field validation messages (field name as the client
	// sent it, or "items[3].topicID" style paths).
	Fields map[string]string
	// RetryAfterSeconds is set for RateLimited and Unavailable when known.
	RetryAfterSeconds int
	// Extensions are extra members of the problem answer (RFC 9457
	// extension members, e.g. the figures of a quota); the standard
	// members' names are never overridden.
	Extensions map[string]any
	Err        error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(string(e.Code))
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if len(e.Fields) > 0 {
		keys := make([]string, 0, len(e.Fields))
		for k := range e.Fields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "; %s: %s", k, e.Fields[k])
		}
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// E builds an error with a formatted client-safe message.
func E(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap attaches a cause that is logged but never shown to clients.
func Wrap(code Code, err error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: err}
}

// Validation collects per-field problems; use Add and then Err.
type Validation struct {
	fields map[string]string
}

// Add records a problem for a field; the first message per field wins.
func (v *Validation) Add(field, msg string) {
	if v.fields == nil {
		v.fields = map[string]string{}
	}
	if _, ok := v.fields[field]; !ok {
		v.fields[field] = msg
	}
}

// Check adds msg for field when ok is false.
func (v *Validation) Check(ok bool, field, msg string) {
	if !ok {
		v.Add(field, msg)
	}
}

// Merge copies another validation's fields under a prefix such as "items[2].".
func (v *Validation) Merge(prefix string, other *Validation) {
	for k, m := range other.fields {
		v.Add(prefix+k, m)
	}
}

// Empty reports whether no problem was recorded.
func (v *Validation) Empty() bool { return len(v.fields) == 0 }

// Err returns nil when nothing was recorded, else an Invalid error.
func (v *Validation) Err() error { return v.ErrWith("the request has invalid fields") }

// ErrWith is Err with its own detail message.
func (v *Validation) ErrWith(message string) error {
	if len(v.fields) == 0 {
		return nil
	}
	return &Error{Code: Invalid, Message: message, Fields: v.fields}
}

// Field is the Invalid error of one field with its own detail message: the
// one-field case of Validation.
func Field(field, problem, message string) *Error {
	var v Validation
	v.Add(field, problem)
	return v.ErrWith(message).(*Error)
}

// CodeOf returns the code of the first *Error in err's chain, or Internal.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// Is reports whether err carries the given code.
func Is(err error, code Code) bool {
	return err != nil && CodeOf(err) == code
}
