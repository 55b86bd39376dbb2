package httpserver

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"supportplatform.dev/pkg/apperr"
)

// nulEscape is how U+0000 appears in JSON text: raw control characters are
// not allowed inside JSON strings, so the escape is the only spelling.
var nulEscape = []byte(`\u0000`)

// maxNULFields bounds the field errors listed for one body.
const maxNULFields = 20

// refuseNUL returns a 400 naming, by JSON path as the client wrote it
// (email, items[2].name), every string value or field name of body that
// holds U+0000. PostgreSQL text cannot store it, so such input would
// otherwise fail deep in a store as a 500. Bodies without the escape cost one
// bytes.Index; only those with it are walked.
func refuseNUL(body []byte) error {
	if !bytes.Contains(body, nulEscape) {
		return nil
	}
	type frame struct {
		object  bool
		wantKey bool
		key     string
		index   int
	}
	var (
		stack  []frame
		fields = map[string]string{}
	)
	path := func() string {
		var b strings.Builder
		for _, f := range stack {
			if f.object {
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(strings.ReplaceAll(f.key, "\x00", `\u0000`))
			} else {
				b.WriteString("[" + strconv.Itoa(f.index) + "]")
			}
		}
		if b.Len() == 0 {
			return "body"
		}
		return b.String()
	}
	afterValue := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].object {
				stack[n-1].wantKey = true
			} else {
				stack[n-1].index++
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	for len(fields) < maxNULFields {
		tok, err := dec.Token()
		if err != nil {
			// io.EOF, or malformed JSON that the decoding reports.
			break
		}
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
			if k, ok := tok.(string); ok {
				stack[n-1].key, stack[n-1].wantKey = k, false
				if strings.IndexByte(k, 0) >= 0 {
					fields[path()] = "the field name must not contain the NUL character (\\u0000)"
				}
				continue
			}
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, frame{object: true, wantKey: true})
			case '[':
				stack = append(stack, frame{})
			default:
				stack = stack[:len(stack)-1]
				afterValue()
			}
		case string:
			if strings.IndexByte(t, 0) >= 0 {
				fields[path()] = "must not contain the NUL character (\\u0000)"
			}
			afterValue()
		default:
			afterValue()
		}
	}
	var v apperr.Validation
	for f, problem := range fields {
		v.Add(f, problem)
	}
	return v.Err()
}
