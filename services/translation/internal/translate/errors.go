package translate

import (
	"errors"

	"supportplatform.dev/ai/mt"
	"supportplatform.dev/pkg/apperr"
)

// Kind classifies a domain failure; the errors themselves are *apperr.Error so
// the HTTP layer maps them to statuses in its one place.
type Kind int

const (
	// KindInvalid is a request that breaks a rule (400); the error's Fields say which.
	KindInvalid Kind = iota + 1
	// KindUnsupported is a valid code no configured provider serves (400 naming the pair).
	KindUnsupported
	// KindUpstream is a failure of the engines behind the domain (500, no detail leaked).
	KindUpstream
)

// FieldError is one broken rule, named by the request field as the API spells it
// ("sourceText", "targetLang", "country", "state", "city").
type FieldError struct {
	Field string
	Msg   string
}

// ErrorKind returns the Kind of a domain error, or 0.
func ErrorKind(err error) Kind {
	var e *apperr.Error
	if !errors.As(err, &e) {
		return 0
	}
	switch {
	case e.Code == apperr.Invalid && errors.Is(err, mt.ErrUnsupportedPair):
		return KindUnsupported
	case e.Code == apperr.Invalid:
		return KindInvalid
	case e.Code == apperr.Internal, e.Code == apperr.Unavailable:
		return KindUpstream
	}
	return 0
}

func invalid(fields ...FieldError) *apperr.Error {
	var v apperr.Validation
	for _, f := range fields {
		v.Add(f.Field, f.Msg)
	}
	return &apperr.Error{Code: apperr.Invalid, Message: "the request is invalid", Fields: v.Err().(*apperr.Error).Fields}
}

func unsupported(pair mt.Pair) *apperr.Error {
	msg := "no translation provider serves " + pair.String()
	return &apperr.Error{Code: apperr.Invalid, Message: msg, Fields: map[string]string{"targetLang": msg}, Err: mt.ErrUnsupportedPair}
}

func upstream(msg string, err error) *apperr.Error {
	return &apperr.Error{Code: apperr.Internal, Message: msg, Err: err}
}

func (k Kind) String() string {
	switch k {
	case KindInvalid:
		return "invalid"
	case KindUnsupported:
		return "unsupported"
	case KindUpstream:
		return "upstream"
	}
	return "unknown"
}
