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
//	GET    /v1.0/users/{id | userPrincipalName}                    the user (id, userPrincipalName, mail; $select)
//	GET    /v1.0/users?$filter=proxyAddresses/any(x:x eq 'smtp:{address}')   the user with that address
//	GET    /v1.0/users/{mb}/mailFolders/{folder}/messages/delta   $select, $filter=receivedDateTime ge X, paging
//	GET    /v1.0/users/{mb}/messages/{id}                         also .../mailFolders/{folder}/messages/{id}
//	GET    /v1.0/users/{mb}/messages/{id}/$value                  a simple MIME rendering
//	GET    /v1.0/users/{mb}/messages/{id}/attachments
//	GET    /v1.0/users/{mb}/messages/{id}/attachments/{aid}/$value
//	POST   /v1.0/users/{mb}/messages/{id}/reply                   202, recorded (Sent) and kept in sentitems
//	POST   /v1.0/users/{mb}/sendMail                              202, recorded (Sent) and kept in sentitems
//
// Mailboxes exist for every address (case-insensitive), which is its user's userPrincipalName, and
// are also addressed by the user GUID the fake names them by in a tenant (UserID). AddAlias gives a
// user another address: mail to it lands in the user's mailbox, but as at Graph the alias is
// refused in paths and subscription resources (404 ErrorInvalidUser) and by GET /users/{alias}
// (404 Request_ResourceNotFound); $filter=proxyAddresses/any(...) finds the user. Tests put mail in them with Deliver (which posts
// the change notifications, with Graph's duplicates) or AddMail (silently).
//
// Token endpoint URL for a client: {base}/{tenant}/oauth2/v2.0/token; Graph base URL: {base}/v1.0.
//
// Where the fake is stricter or narrower than Graph, on purpose:
//   - changeType must be "created" and the resource a mail folder's messages
//     (/users/{mailbox}/mailFolders('{id}')/messages or .../mailFolders/{id}/messages): that is all
//     the mail service subscribes to, so anything else is a bug worth a 400.
//   - A subscription past its expirationDateTime (by Options.Now) is gone, as an unrenewed Graph
//     subscription is: GET, PATCH and DELETE answer 404 and the list omits it.
//   - Redirects from a notification endpoint are not followed.
//
// Where the fake refuses what Graph refuses:
//   - $select of messages, delta and attachments names only properties of the addressed type, or
//     of a derived type with its cast: $select=contentId on attachments answers 400 BadRequest
//     "Could not find a property named 'contentId' on type 'microsoft.graph.attachment'.", while
//     microsoft.graph.fileAttachment/contentId is accepted.
//   - An http:// notificationUrl or lifecycleNotificationUrl answers 400, unless
//     Options.AllowHTTPNotificationURL says a test wants it.
//   - Every create makes a new subscription with its own id, even for a resource that has one (no
//     409); SetCreateDelay makes creates slow, and a create whose client gave up is made anyway.
//
// Tests drive faults and notifications through methods (Throttle, FailNext, SetHandshake, Expire,
// Notify, NotifyBatch, NotifyLifecycle, Deliver, ExpireDeltaTokens, RevokeTokens, SetMailLatency). A separately running fake offers the same through a small
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
//	POST /_fake/createdelay?d=30s                   creates take that much longer (made even when the client gave up)
//	POST /_fake/mail                                deliver the JSON DeliverMail in the body; answers {"id"}
//	GET  /_fake/sent                                replies and sendMails received, in order
//	POST /_fake/deltaexpire?mailbox=a@b.example     every delta link of the mailbox answers 410
//
// For example, with the fake's address in $GRAPH_FAKE:
//
//	curl -s "$GRAPH_FAKE/_fake/subscriptions"
//	curl -s -X POST "$GRAPH_FAKE/_fake/notify/$SUB_ID?n=3"
package graphfake
