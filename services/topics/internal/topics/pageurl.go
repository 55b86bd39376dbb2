package topics

import (
	"errors"
	"net"
	"net/url"
	"strings"
	"unicode/utf8"
)

// MaxURLLen bounds page URLs and patterns, in bytes after normalising (the
// normalised form is percent-encoded ASCII for paths; the bound keeps the
// pattern indexable).
const MaxURLLen = 2048

var errTooLong = errors.New("must be at most 2048 bytes long once normalised")

// NormalizeURL turns an absolute http(s) URL into the form patterns and
// lookups are compared in: scheme and host lower-cased, the scheme's default
// port dropped, an empty path made "/", the fragment removed. Path and query
// stay as sent (they are case-sensitive on most servers). The error text is a
// field message.
func NormalizeURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", errors.New("is required")
	}
	if !utf8.ValidString(raw) || len(raw) > 4*MaxURLLen {
		return "", errTooLong
	}
	for _, r := range raw {
		if r < 0x20 || r == 0x7f {
			return "", errors.New("must not contain control characters")
		}
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Opaque != "" {
		return "", errors.New("must be an absolute http or https URL")
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", errors.New("must be an absolute http or https URL")
	}
	if u.User != nil {
		return "", errors.New("must not contain credentials")
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return "", errors.New("must be an absolute http or https URL with a host")
	}
	port := u.Port()
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	switch {
	case port != "":
		u.Host = net.JoinHostPort(host, port)
	case strings.Contains(host, ":"):
		u.Host = "[" + host + "]"
	default:
		u.Host = host
	}
	u.Fragment, u.RawFragment = "", ""
	if u.Path == "" {
		u.Path, u.RawPath = "/", ""
	}
	out := u.String()
	if len(out) > MaxURLLen {
		return "", errTooLong
	}
	return out, nil
}
