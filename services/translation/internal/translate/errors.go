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
	return v.ErrWith("the request is invalid").(*apperr.Error)
}

func unsupported(pair mt.Pair) *apperr.Error {
	msg := "no translation provider serves " + pair.String()
	e := apperr.Field("targetLang", msg, msg)
	e.Err = mt.ErrUnsupportedPair
	return e
}

func upstream(msg string, err error) *apperr.Error {
	return &apperr.Error{Code: apperr.Internal, Message: msg, Err: err}
}

// notTranslated is the 422 of a text whose every translation was refused as
// not a translation of it (llmtranslate.ErrNotTranslation): what the client
// sent cannot be translated as it is, and nothing was stored.
func notTranslated(err error) *apperr.Error {
	return &apperr.Error{Code: apperr.Unprocessable, Err: err,
		Message: "the translation engine did not answer with a translation of this text (it may hold instructions to the model); nothing was stored"}
}
