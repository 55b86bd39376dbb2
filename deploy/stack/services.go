package stack

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Service describes one binary of the platform. This table is the single
// place that says which binaries exist and which public path prefixes each one
// owns: the Traefik dynamic configuration (local and compose), the build and
// the process supervisor are all derived from it, so adding a service is one
// entry here.
type Service struct {
	// Name is the binary name, the router/service name in Traefik and the
	// host name in docker-compose.yml.
	Name string
	// Module is the directory of the Go module, relative to the repository
	// root. Empty means services/<Name>.
	Module string
	// Cmd is the package path of the binary inside Module. Empty means
	// ./cmd/<Name>.
	Cmd string
	// Prefixes are the public path prefixes the gateway routes to this
	// service, matched case-insensitively on whole segments. A service
	// without prefixes (a worker) is built and supervised but not routed.
	// The single prefix "/" makes the service the fallback (the console):
	// it gets every path outside the first segments of the other services'
	// prefixes (/api, /docs, /.well-known), below every other route, so an
	// unknown /api path still gets the gateway's 404 problem.
	Prefixes []string
	// Callbacks are exact paths (inside Prefixes) that an outside provider
	// calls: the gateway routes them without the per-client-IP rate limit,
	// because the provider sends from a few addresses for every tenant; the
	// service limits them per subscription instead.
	Callbacks []string
	// Schema is the PostgreSQL schema the service owns; empty: it uses no
	// database. The service runs as its own role, DatabaseRole, with rights
	// on that schema only.
	Schema string
	// Bootstrap marks the service whose binary seeds the demo customer with
	// its `bootstrap` subcommand (auth).
	Bootstrap bool
	// DebPackages are the Debian packages the binary needs at run time:
	// installed by `make test`/`make run` when missing, and in its image.
	DebPackages []string
	// Standalone marks a service that uses neither PostgreSQL, Redis nor
	// NATS (the API reference page): it is given no URL or credentials for
	// them and has no NATS user (least privilege).
	Standalone bool
}

// Services is the table of every binary, in start order: auth first because
// the others fetch its JWKS.
var Services = []Service{
	{
		Name:      "auth",
		Prefixes:  []string{"/api/Auth", "/api/Customers", "/api/Accounts", "/.well-known/jwks.json"},
		Schema:    "auth",
		Bootstrap: true,
	},
	{
		Name:     "topics",
		Prefixes: []string{"/api/Topics", "/api/TopicActions", "/api/TopicDocuments", "/api/PageTopicMappings", "/api/Actions", "/api/Documents"},
		Schema:   "topics",
	},
	{
		// The mail context's HTTP binary: channels, the mail provider's
		// callbacks, the subscription toggles and the Microsoft 365 tenant
		// connections (whose browser callback is an ordinary, rate-limited
		// route: it needs no bearer token, the state authenticates it).
		Name:      "mailingest",
		Module:    "services/mail",
		Prefixes:  []string{"/api/Channels", "/api/ProviderWebhook", "/api/ProviderConnections"},
		Callbacks: []string{"/api/ProviderWebhook"},
		Schema:    "mail",
	},
	{
		// The scheduled renewal of the provider subscriptions (not routed).
		Name:   "renewal",
		Module: "services/mail",
		Schema: "mail",
	},
	{
		// Mail imports and replies (not routed): folder imports into
		// MAIL_INBOUND, replies out by mail. Any number of replicas.
		Name:   "importreply",
		Module: "services/mail",
		Schema: "mail",
	},
	{
		// End users, tickets and their messages.
		Name:     "tickets",
		Prefixes: []string{"/api/Tickets", "/api/TicketMessages", "/api/EndUsers", "/api/Assistant"},
		Schema:   "tickets",
	},
	{
		// The AI assistant (not routed): topic detection and prepared
		// replies on new messages, written through the tickets schema.
		// Apertium translates replies the engine cannot write directly.
		Name:        "assistant",
		Module:      "services/tickets",
		Schema:      "tickets",
		DebPackages: []string{"apertium", "apertium-eng-spa", "apertium-eng-cat", "apertium-fr-es", "apertium-es-pt"},
	},
	{
		Name:     "translation",
		Prefixes: []string{"/api/Translations"},
		// The offline machine-translation engine and its language pairs.
		DebPackages: []string{"apertium", "apertium-eng-spa", "apertium-eng-cat", "apertium-fr-es", "apertium-es-pt"},
	},
	{
		// The consoles' live updates: each customer's events as
		// Server-Sent Events. Any number of replicas, no sticky sessions:
		// every replica follows EVENTS itself.
		Name:     "live",
		Prefixes: []string{"/api/live"},
	},
	{
		// The API reference page: Swagger UI over gateway/openapi.yaml,
		// embedded in the binary (default HTTP_ADDR 127.0.0.1:8091).
		Name:       "docs",
		Prefixes:   []string{"/docs"},
		Standalone: true,
	},
	{
		// The agent console: the single-page app embedded in the binary
		// (default HTTP_ADDR 127.0.0.1:8093), served at / and calling the
		// API through the gateway like any client.
		Name:       "console",
		Prefixes:   []string{"/"},
		Standalone: true,
	},
}

// ModuleDir is the module directory relative to the repository root.
func (s Service) ModuleDir() string {
	if s.Module != "" {
		return s.Module
	}
	return path.Join("services", s.Name)
}

// CmdPackage is the package of the binary relative to its module.
func (s Service) CmdPackage() string {
	if s.Cmd != "" {
		return s.Cmd
	}
	return "./cmd/" + s.Name
}

// DatabaseRole is the PostgreSQL role the service runs as: sp_<schema>.
// Empty for a service without a schema.
func (s Service) DatabaseRole() string {
	if s.Schema == "" {
		return ""
	}
	return "sp_" + s.Schema
}

// Routed reports whether the gateway routes requests to the service.
func (s Service) Routed() bool { return len(s.Prefixes) > 0 }

// Fallback reports whether the service takes the paths no other service's
// namespace covers (its only prefix is "/").
func (s Service) Fallback() bool { return len(s.Prefixes) == 1 && s.Prefixes[0] == "/" }

// Rule is the Traefik router rule of the service: one case-insensitive
// PathRegexp per prefix, each matching the prefix as whole path segments so
// that /api/Customers does not also catch /api/CustomersExport. The
// fallback's rule is every path outside the reserved namespaces.
func (s Service) Rule() string {
	if s.Fallback() {
		return fmt.Sprintf("PathPrefix(`/`) && !PathRegexp(`%s`)", reservedRegexp())
	}
	parts := make([]string, 0, len(s.Prefixes))
	for _, p := range s.Prefixes {
		parts = append(parts, fmt.Sprintf("PathRegexp(`%s`)", PrefixRegexp(p)))
	}
	return strings.Join(parts, " || ")
}

// CallbackRule is the Traefik rule of the service's callback paths: each
// path exactly (case-insensitively, with an optional trailing slash); ""
// when it has none.
func (s Service) CallbackRule() string {
	parts := make([]string, 0, len(s.Callbacks))
	for _, p := range s.Callbacks {
		parts = append(parts, fmt.Sprintf("PathRegexp(`(?i)^%s/?$`)", regexp.QuoteMeta(strings.TrimSuffix(p, "/"))))
	}
	return strings.Join(parts, " || ")
}

// PrefixRegexp is the case-insensitive regular expression matching a path
// that equals prefix or continues it with a new segment.
func PrefixRegexp(prefix string) string {
	return "(?i)^" + regexp.QuoteMeta(strings.TrimSuffix(prefix, "/")) + "(/|$)"
}

// DebPackages is the union of the Debian packages the services need.
func DebPackages() []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range Services {
		for _, p := range s.DebPackages {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// LookupService returns the table entry named name.
func LookupService(name string) (Service, bool) {
	for _, s := range Services {
		if s.Name == name {
			return s, true
		}
	}
	return Service{}, false
}

// ServiceForPath returns the routed service that owns the request path p,
// using the same regular expressions as the gateway.
func ServiceForPath(p string) (Service, bool) {
	var fallback *Service
	for i, s := range Services {
		if s.Fallback() {
			fallback = &Services[i]
			continue
		}
		for _, prefix := range s.Prefixes {
			if regexp.MustCompile(PrefixRegexp(prefix)).MatchString(p) {
				return s, true
			}
		}
	}
	if fallback != nil && !regexp.MustCompile(reservedRegexp()).MatchString(p) {
		return *fallback, true
	}
	return Service{}, false
}

// ownEndpoints are the paths every service serves on its own port and the
// gateway never routes (README, Routes).
var ownEndpoints = []string{"healthz", "readyz", "metrics"}

// ReservedSegments are the first path segments of the other services'
// prefixes ("api", ".well-known", "docs"), in table order, and the
// services' own endpoints: the namespaces the fallback never gets.
func ReservedSegments() []string {
	out := slices.Clone(ownEndpoints)
	for _, s := range Services {
		if s.Fallback() {
			continue
		}
		for _, p := range s.Prefixes {
			first, _, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
			if !slices.ContainsFunc(out, func(o string) bool { return strings.EqualFold(o, first) }) {
				out = append(out, first)
			}
		}
	}
	return out
}

// reservedRegexp matches a path inside one of the ReservedSegments,
// case-insensitively and on whole segments.
func reservedRegexp() string {
	quoted := make([]string, 0, 4)
	for _, seg := range ReservedSegments() {
		quoted = append(quoted, regexp.QuoteMeta(seg))
	}
	return "(?i)^/(" + strings.Join(quoted, "|") + ")(/|$)"
}
