// Package graphfake is a fake Microsoft Graph (and Entra token endpoint) for mail change
// notifications. It speaks the real HTTP API, so the production client runs against it unchanged:
// the mail service's unit tests wrap it in httptest, the gateway's end-to-end tests point the mail
// service at it, and `make run` serves it when no real Graph credentials are configured.
//
// Endpoints, with the paths Graph and Entra use:
//
//	POST   /{tenant}/oauth2/v2.0/token     client credentials grant (form or HTTP Basic client auth)
//	POST   /v1.0/subscriptions             create; runs the validation handshake first
//	GET    /v1.0/subscriptions             list the calling app's subscriptions in the token's tenant
//	GET    /v1.0/subscriptions/{id}
//	PATCH  /v1.0/subscriptions/{id}        only expirationDateTime may change
//	DELETE /v1.0/subscriptions/{id}
//
// Token endpoint URL for a client: {base}/{tenant}/oauth2/v2.0/token; Graph base URL: {base}/v1.0.
//
// Where the fake is stricter or narrower than Graph, on purpose:
//   - changeType must be "created" and the resource a mail folder's messages
//     (/users/{mailbox}/mailFolders('{id}')/messages or .../mailFolders/{id}/messages): that is all
//     the mail service subscribes to, so anything else is a bug worth a 400.
//   - notificationUrl may be http as well as https, so a dev stack without TLS works.
//   - A subscription past its expirationDateTime (by Options.Now) is gone, as an unrenewed Graph
//     subscription is: GET, PATCH and DELETE answer 404 and the list omits it.
//   - Redirects from a notification endpoint are not followed.
//
// Tests drive faults and notifications through methods (Throttle, FailNext, SetHandshake, Expire,
// Notify, NotifyBatch, NotifyLifecycle). A separately running fake offers the same through a small
// control API without authentication, for curl from a developer's shell; never expose it:
//
//	GET  /_fake/subscriptions                       live subscriptions as JSON
//	GET  /_fake/calls                               API calls by method, token requests by tenant
//	POST /_fake/notify/{id}?n=1                     post n "created" notifications for a new message each
//	POST /_fake/lifecycle/{id}?event=missed         post a lifecycle notification
//	POST /_fake/expire/{id}                         drop a subscription as if it had not been renewed
//	POST /_fake/throttle?n=1&retryAfter=2.128       the next n API calls answer 429
//	POST /_fake/fail?n=1&status=503                 the next n API calls answer status
//	POST /_fake/handshake?mode=validate|skip|fail   how creates treat the validation handshake
//
// For example, with the fake's address in $GRAPH_FAKE:
//
//	curl -s "$GRAPH_FAKE/_fake/subscriptions"
//	curl -s -X POST "$GRAPH_FAKE/_fake/notify/$SUB_ID?n=3"
package graphfake
