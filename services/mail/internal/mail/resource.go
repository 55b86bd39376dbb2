package mail

import (
	"net/url"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"supportplatform.dev/pkg/textfield"
)

// MaxResourceLen bounds the resource path the fallback parser looks at; a
// longer one is not a folder subscription's resource.
const MaxResourceLen = 2048

// FolderResource is the mailbox and provider folder a subscription resource
// names.
type FolderResource struct {
	Mailbox  string // lower-case address or GUID of the mailbox
	FolderID string // the provider's folder id, case kept
}

var guidPattern = regexp.MustCompile(`^(?i:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$`)

// ParseFolderResource reads the mailbox and folder of a folder subscription's
// resource: users/{mailbox}/mailFolders('{folderId}')/messages or
// users/{mailbox}/mailFolders/{folderId}/messages, case-insensitive, with or
// without one leading slash, single or double quotes, percent-encoded
// segments, and the mailbox as an address or a GUID. Anything else is not a
// folder resource (false), notably the message resources real notifications
// carry (Users/{guid}/Messages/{id}): the folder of those comes from the
// subscription id only.
func ParseFolderResource(resource string) (FolderResource, bool) {
	if resource == "" || len(resource) > MaxResourceLen || !utf8.ValidString(resource) {
		return FolderResource{}, false
	}
	resource = strings.TrimPrefix(resource, "/")
	// Split before decoding so that an encoded slash stays in its segment.
	raw := strings.Split(resource, "/")
	segs := make([]string, len(raw))
	for i, s := range raw {
		d, err := url.PathUnescape(s)
		if err != nil || d == "" || !utf8.ValidString(d) {
			return FolderResource{}, false
		}
		segs[i] = d
	}
	if len(segs) < 4 || !strings.EqualFold(segs[0], "users") || !strings.EqualFold(segs[len(segs)-1], "messages") {
		return FolderResource{}, false
	}
	var folder string
	switch len(segs) {
	case 4: // mailFolders('{id}')
		s := segs[2]
		const prefix = "mailfolders("
		if len(s) < len(prefix)+3 || !strings.EqualFold(s[:len(prefix)], prefix) || s[len(s)-1] != ')' {
			return FolderResource{}, false
		}
		var ok bool
		if folder, ok = unquote(s[len(prefix) : len(s)-1]); !ok {
			return FolderResource{}, false
		}
	case 5: // mailFolders/{id}
		if !strings.EqualFold(segs[2], "mailFolders") {
			return FolderResource{}, false
		}
		folder = segs[3]
	default:
		return FolderResource{}, false
	}
	mailbox, ok := parseMailbox(segs[1])
	if !ok || !validFolderID(folder) {
		return FolderResource{}, false
	}
	return FolderResource{Mailbox: mailbox, FolderID: folder}, true
}

// unquote reads an OData string key: 'x' (a quote inside doubled) or "x".
func unquote(s string) (string, bool) {
	if len(s) < 3 {
		return "", false
	}
	q := s[0]
	if (q != '\'' && q != '"') || s[len(s)-1] != q {
		return "", false
	}
	inner := s[1 : len(s)-1]
	if q == '\'' {
		// A lone quote inside would end the key early.
		if strings.Count(inner, "'")%2 != 0 {
			return "", false
		}
		inner = strings.ReplaceAll(inner, "''", "'")
	} else if strings.Contains(inner, `"`) {
		return "", false
	}
	return inner, inner != ""
}

func parseMailbox(s string) (string, bool) {
	if guidPattern.MatchString(s) {
		return strings.ToLower(s), true
	}
	return textfield.Email(s)
}

func validFolderID(s string) bool {
	return s != "" && utf8.RuneCountInString(s) <= MaxExternalFolderIDLen && !strings.ContainsFunc(s, unicode.IsControl)
}
