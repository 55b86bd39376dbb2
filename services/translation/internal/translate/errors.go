package translate

import (
	"supportplatform.dev/ai/mt"
	"supportplatform.dev/pkg/apperr"
)

// FieldError is one broken rule, named by the request field as the API spells it
// ("sourceText", "targetLang", "country", "state", "city").
type FieldError struct {
	Field string
	Msg   string
}

func invalid(fields ...FieldError) *apperr.Error {
	var v apperr.Validation
	for _, f := range fields {
		v.Add(f.Field, f.Msg)
	}
	e := v.Err().(*apperr.Error)
	e.Message = "the request is invalid"
	return e
}

func unsupported(pair mt.Pair) *apperr.Error {
	msg := "no translation provider serves " + pair.String()
	return &apperr.Error{Code: apperr.Invalid, Message: msg, Fields: map[string]string{"targetLang": msg}, Err: mt.ErrUnsupportedPair}
}

func upstream(msg string, err error) *apperr.Error {
	return &apperr.Error{Code: apperr.Internal, Message: msg, Err: err}
}
