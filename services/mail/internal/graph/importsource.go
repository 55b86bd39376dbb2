package graph

import (
	"context"
	"errors"
	"io"
	"net/http"

	"supportplatform.dev/services/mail/internal/importer"
)

// ImportSource adapts Client to importer.Graph: Graph's messages become the
// import's and its errors the import's classes.
type ImportSource struct{ c *Client }

// NewImportSource returns c as the import's source of mail.
func NewImportSource(c *Client) ImportSource { return ImportSource{c: c} }

// importClass maps Graph's answers to the import's error classes. A 4xx
// skips one mail only when it concerns that mail: 401 and 403 (the app's
// token or rights in the mailbox), 408 and 429 stay unclassed, failing the
// round, as does everything else (5xx, transport).
func importClass(err error) error {
	var class error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrSyncStateNotFound):
		class = importer.ErrSyncStateNotFound
	case errors.Is(err, ErrReplyTooLarge):
		class = importer.ErrReplyTooLarge
	case errors.Is(err, ErrMalformedReply):
		class = importer.ErrMalformedReply
	case IsNotFound(err):
		class = importer.ErrNotFound
	default:
		switch st := status(err); {
		case st < 400 || st > 499:
			return err
		case st == http.StatusUnauthorized, st == http.StatusForbidden, st == http.StatusRequestTimeout, st == http.StatusTooManyRequests:
			return err
		}
		class = importer.ErrRefused
	}
	return &importer.ProviderError{Class: class, Err: err}
}

func (s ImportSource) MessagesDelta(ctx context.Context, tenant string, q importer.DeltaQuery, link string) (importer.DeltaPage, error) {
	page, err := s.c.MessagesDelta(ctx, tenant, q, link)
	return page, importClass(err)
}

func (s ImportSource) Message(ctx context.Context, tenant, mailbox, id string) (importer.Message, error) {
	m, err := s.c.Message(ctx, tenant, mailbox, id)
	return m, importClass(err)
}

func (s ImportSource) Attachments(ctx context.Context, tenant, mailbox, messageID string) ([]importer.Attachment, error) {
	list, err := s.c.Attachments(ctx, tenant, mailbox, messageID)
	return list, importClass(err)
}

func (s ImportSource) AttachmentContent(ctx context.Context, tenant, mailbox, messageID, attachmentID string) (io.ReadCloser, error) {
	rc, err := s.c.AttachmentContent(ctx, tenant, mailbox, messageID, attachmentID)
	if err != nil {
		return nil, importClass(err)
	}
	return rc, nil
}
