// Package mail is the mail bounded context: e-mail (and web, api) channels
// with their folders, the mail provider's change-notification callbacks, the
// provider subscriptions and their renewal, and (next) the import of mail
// into tickets. Its binaries are cmd/mailingest (HTTP), cmd/renewal (the
// scheduled subscription job) and cmd/importreply (the MAIL_IMPORT consumer and
// the replier).
package mail
