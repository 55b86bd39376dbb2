package graph

import (
	"context"
	"errors"
	"io"
	"time"

	"supportplatform.dev/services/mail/internal/importer"
	"supportplatform.dev/services/mail/internal/mail"
	"supportplatform.dev/services/mail/internal/replier"
)

// ErrNotConfigured is every call's error when no app is configured.
var ErrNotConfigured = errors.New("no Microsoft Graph app is configured (GRAPH_CLIENT_ID, GRAPH_CLIENT_SECRET)")

// Unconfigured is Graph without an app (Settings.Configured is false): the
// mail provider, the import's source and the replier's sender, refusing
// every call with ErrNotConfigured. The callers treat that as a failure to
// retry: subscriptions, imports and replies go through once an app is set.
type Unconfigured struct{}

var (
	_ mail.Provider  = Unconfigured{}
	_ importer.Graph = Unconfigured{}
	_ replier.Sender = Unconfigured{}
)

func (Unconfigured) Create(context.Context, string, mail.NewProviderSubscription) (mail.ProviderSubscription, error) {
	return mail.ProviderSubscription{}, ErrNotConfigured
}

func (Unconfigured) ResolveMailbox(context.Context, string, string) (mail.MailboxUser, error) {
	return mail.MailboxUser{}, ErrNotConfigured
}

func (Unconfigured) Renew(context.Context, string, string, time.Time) (mail.ProviderSubscription, error) {
	return mail.ProviderSubscription{}, ErrNotConfigured
}

func (Unconfigured) Delete(context.Context, string, string) error { return ErrNotConfigured }

func (Unconfigured) List(context.Context, string) ([]mail.ProviderSubscription, error) {
	return nil, ErrNotConfigured
}

func (Unconfigured) MessagesDelta(context.Context, string, importer.DeltaQuery, string) (importer.DeltaPage, error) {
	return importer.DeltaPage{}, ErrNotConfigured
}

func (Unconfigured) Message(context.Context, string, string, string) (importer.Message, error) {
	return importer.Message{}, ErrNotConfigured
}

func (Unconfigured) Attachments(context.Context, string, string, string) ([]importer.Attachment, error) {
	return nil, ErrNotConfigured
}

func (Unconfigured) AttachmentContent(context.Context, string, string, string, string) (io.ReadCloser, error) {
	return nil, ErrNotConfigured
}

func (Unconfigured) Reply(context.Context, string, string, string, replier.OutgoingMail) error {
	return ErrNotConfigured
}

func (Unconfigured) SendMail(context.Context, string, string, replier.OutgoingMail) error {
	return ErrNotConfigured
}
