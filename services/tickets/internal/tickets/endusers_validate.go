package tickets

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"supportplatform.dev/ai/langcode"
	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/textfield"
)

// Bounds of the end-user fields.
const (
	MaxNameLen  = 200 // characters
	MaxPhoneLen = 40  // characters
	// MaxQueryLen bounds the q and email filters.
	MaxQueryLen = 320
)

func validPhone(s string) bool {
	digits := 0
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case r == ' ' || r == '+' || r == '-' || r == '(' || r == ')':
		default:
			return false
		}
	}
	return digits > 0
}

// Normalize trims and validates an end user: name required; e-mail, phone
// and language optional; customFieldsData a JSON object ({} when absent).
func (in EndUserInput) Normalize() (EndUserInput, error) {
	var v apperr.Validation
	in.Name = strings.TrimSpace(in.Name)
	textfield.Line(&v, "name", in.Name, true, MaxNameLen)
	in.Email = strings.TrimSpace(in.Email)
	if in.Email != "" {
		if e, ok := textfield.Email(in.Email); ok {
			in.Email = e
		} else {
			v.Add("email", "must be one e-mail address without a display name (name@example.com)")
		}
	}
	in.Phone = strings.TrimSpace(in.Phone)
	if in.Phone != "" {
		if utf8.RuneCountInString(in.Phone) > MaxPhoneLen || !validPhone(in.Phone) {
			v.Add("phone", fmt.Sprintf("must be at most %d characters of digits, spaces, +, -, ( and )", MaxPhoneLen))
		}
	}
	in.Language = strings.TrimSpace(in.Language)
	if in.Language != "" {
		if code, err := langcode.Normalize(in.Language); err == nil {
			in.Language = code
		} else {
			v.Add("language", "must be an ISO 639-1 or ISO 639-3 language code (en, deu)")
		}
	}
	fields, msg := normalizeCustomFields(in.CustomFields)
	if msg != "" {
		v.Add("customFieldsData", msg)
	}
	in.CustomFields = fields
	return in, v.Err()
}

// ParseEndUserSort reads the sort parameter: endUserID (the default), name
// or dateCreated, each with a leading - for descending order.
func ParseEndUserSort(raw string) (EndUserSort, error) {
	s := EndUserSort{By: SortByID}
	if raw == "" {
		return s, nil
	}
	key, desc := strings.CutPrefix(raw, "-")
	s.Desc = desc
	switch strings.ToLower(key) {
	case strings.ToLower(SortByID):
		s.By = SortByID
	case strings.ToLower(SortByName):
		s.By = SortByName
	case strings.ToLower(SortByCreated):
		s.By = SortByCreated
	default:
		return s, apperr.Field("sort", "must be endUserID, name or dateCreated, optionally preceded by -", "invalid sort")
	}
	return s, nil
}
