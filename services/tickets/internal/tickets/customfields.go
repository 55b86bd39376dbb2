package tickets

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Bounds of customFieldsData (end users, tickets and messages).
const (
	// MaxCustomFieldsBytes bounds customFieldsData as compact JSON.
	MaxCustomFieldsBytes = 16 << 10
	// MaxCustomFields bounds its keys; MaxCustomFieldKeyLen each key's
	// characters.
	MaxCustomFields      = 50
	MaxCustomFieldKeyLen = 100
)

// normalizeCustomFields returns the compact object, or a problem.
func normalizeCustomFields(raw json.RawMessage) (json.RawMessage, string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage(`{}`), ""
	}
	if raw[0] != '{' {
		return nil, "must be a JSON object"
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, "must be a JSON object"
	}
	if len(m) > MaxCustomFields {
		return nil, fmt.Sprintf("must have at most %d keys", MaxCustomFields)
	}
	for k := range m {
		if k == "" || utf8.RuneCountInString(k) > MaxCustomFieldKeyLen {
			return nil, fmt.Sprintf("keys must be 1 to %d characters", MaxCustomFieldKeyLen)
		}
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, "must be a JSON object"
	}
	if compact.Len() > MaxCustomFieldsBytes {
		return nil, fmt.Sprintf("must be at most %d bytes as compact JSON", MaxCustomFieldsBytes)
	}
	return compact.Bytes(), ""
}
