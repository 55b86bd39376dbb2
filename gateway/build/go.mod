// This module only pins and builds the Traefik binary used as the gateway.
// It is kept out of go.work so Traefik's large dependency graph never
// influences the versions the services resolve.
module supportplatform/gateway/build

go 1.25.0

require github.com/traefik/traefik/v3 v3.6.12

// Copied from Traefik v3.6.12's own go.mod: `go install pkg@version` refuses
// modules with replace directives, so the replacements must live here.
replace (
	github.com/abbot/go-http-auth => github.com/containous/go-http-auth v0.4.1-0.20200324110947-a37a7636d23e
	github.com/gorilla/mux => github.com/containous/mux v0.0.0-20250523120546-41b6ec3aed59
	github.com/mailgun/minheap => github.com/containous/minheap v0.0.0-20190809180810-6e71eb837595
)

exclude github.com/tencentcloud/tencentcloud-sdk-go v3.0.83+incompatible

tool github.com/traefik/traefik/v3/cmd/traefik
