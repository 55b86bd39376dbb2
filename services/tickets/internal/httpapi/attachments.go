package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/httpcrud"
	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/services/tickets/internal/tickets"
)

// Attachments is what the attachment routes call of the domain.
type Attachments interface {
	MaxBytes() int64
	Upload(ctx context.Context, customerID, messageID int64, fileName string, declared int64, body io.Reader) (tickets.Attachment, error)
	Attachments(ctx context.Context, customerID, messageID int64) ([]tickets.Attachment, error)
	Open(ctx context.Context, customerID, messageID, id int64) (tickets.Attachment, io.ReadCloser, error)
	Delete(ctx context.Context, customerID, messageID, id int64) error
}

// multipartSlack is what an upload's body may carry beyond the file: the
// multipart boundaries and part headers, and small extra fields.
const multipartSlack = 64 << 10

// limitUploadBody gives the upload route (POST path) its own body limit:
// MAX_BODY_BYTES is for JSON and would cut any real file.
func (h *Handlers) limitUploadBody(path string) {
	max := int64(tickets.DefaultMaxAttachmentBytes)
	if h.Attachments != nil {
		max = h.Attachments.MaxBytes()
	}
	h.s.SetBodyLimit(http.MethodPost, path, max+multipartSlack)
}

type attachmentResponse struct {
	TicketMessageAttachmentID int64     `json:"ticketMessageAttachmentID"`
	TicketMessageID           int64     `json:"ticketMessageID"`
	FileName                  string    `json:"fileName"`
	ContentType               string    `json:"contentType"`
	Size                      int64     `json:"size"`
	SHA256                    string    `json:"sha256"`
	DateCreated               time.Time `json:"dateCreated"`
}

func toAttachment(a tickets.Attachment) attachmentResponse {
	return attachmentResponse{TicketMessageAttachmentID: a.ID, TicketMessageID: a.MessageID, FileName: a.FileName,
		ContentType: a.ContentType, Size: a.Size, SHA256: a.SHA256, DateCreated: a.CreatedAt.UTC()}
}

func attachmentsPath(messageID int64) string {
	return fmt.Sprintf("/api/TicketMessages/%d/attachments", messageID)
}

// uploadAttachment streams the multipart part `file` into the domain: the
// body is read once, as it arrives, never parsed into memory or temporary
// files (no ParseMultipartForm).
func (h *Handlers) uploadAttachment(c *gin.Context) error {
	cid, mid, err := httpcrud.CustomerAndID(c)
	if err != nil {
		return err
	}
	part, name, err := filePart(c.Request)
	if err != nil {
		return err
	}
	defer part.Close()
	// The request's size bounds the file's: the quota is checked with it
	// before a byte is stored.
	a, err := h.Attachments.Upload(c.Request.Context(), cid, mid, name, c.Request.ContentLength, &uploadBody{r: part, ctx: c.Request.Context()})
	if err != nil {
		return err
	}
	httpcrud.Created(c, attachmentsPath(mid), a.ID, toAttachment(a))
	return nil
}

func noFile(msg string) error {
	return apperr.Field("file", msg, "the body must be multipart/form-data with the file in a part named file")
}

// filePart skips to the part named file and returns it with its file
// name as the client wrote it (filename*, RFC 2231, decoded).
func filePart(r *http.Request) (*multipart.Part, string, error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, "", noFile("is missing: the body is not multipart/form-data")
	}
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return nil, "", noFile("is missing: no part is named file")
		}
		if err != nil {
			return nil, "", bodyError(r.Context(), err)
		}
		if p.FormName() != "file" {
			if _, err := io.Copy(io.Discard, p); err != nil {
				return nil, "", bodyError(r.Context(), err)
			}
			continue
		}
		_, params, err := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
		if err != nil || params["filename"] == "" {
			_ = p.Close()
			return nil, "", noFile("must be a file: its part needs a file name (Content-Disposition filename)")
		}
		return p, params["filename"], nil
	}
}

// bodyError turns a failure to read the request body into a client error:
// over the route's limit 413, a body that ends early or breaks the
// multipart syntax 400; when the request's time is up, 503.
func bodyError(ctx context.Context, err error) error {
	var ae *apperr.Error
	if errors.As(err, &ae) {
		return err
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return apperr.E(apperr.TooLarge, "the request body is larger than %d bytes", mbe.Limit)
	}
	if ctx.Err() != nil {
		return apperr.Wrap(apperr.Unavailable, err, "the upload did not finish in time")
	}
	return &apperr.Error{Code: apperr.Invalid, Message: "the multipart body is malformed or ended early",
		Fields: map[string]string{"file": "could not be read completely"}, Err: err}
}

// uploadBody is the file part as the domain reads it: its read errors are
// client errors (bodyError).
type uploadBody struct {
	r   io.Reader
	ctx context.Context
}

func (b *uploadBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		return n, bodyError(b.ctx, err)
	}
	return n, err
}

func (h *Handlers) listAttachments(c *gin.Context) error {
	cid, mid, err := httpcrud.CustomerAndID(c)
	if err != nil {
		return err
	}
	list, err := h.Attachments.Attachments(c.Request.Context(), cid, mid)
	if err != nil {
		return err
	}
	out := make([]attachmentResponse, len(list))
	for i, a := range list {
		out[i] = toAttachment(a)
	}
	c.JSON(http.StatusOK, out)
	return nil
}

func attachmentIDs(c *gin.Context) (customerID, messageID, id int64, err error) {
	if customerID, messageID, err = httpcrud.CustomerAndID(c); err != nil {
		return
	}
	id, err = httpserver.PathIDNamed(c, "attachmentId")
	return
}

// downloadAttachment streams the bytes with the sniffed type. The file is
// the client's: it is served as a download (Content-Disposition
// attachment), never sniffed into something else by a browser (nosniff),
// and sandboxed should it be opened anyway (CSP).
func (h *Handlers) downloadAttachment(c *gin.Context) error {
	cid, mid, id, err := attachmentIDs(c)
	if err != nil {
		return err
	}
	a, r, err := h.Attachments.Open(c.Request.Context(), cid, mid, id)
	if err != nil {
		return err
	}
	defer r.Close()
	c.DataFromReader(http.StatusOK, a.Size, a.ContentType, r, map[string]string{
		"Content-Disposition":     ContentDisposition(a.FileName),
		"X-Content-Type-Options":  "nosniff",
		"Content-Security-Policy": "default-src 'none'; sandbox",
		"Cache-Control":           "private, no-cache",
	})
	return nil
}

func (h *Handlers) deleteAttachment(c *gin.Context) error {
	cid, mid, id, err := attachmentIDs(c)
	if err != nil {
		return err
	}
	if err := h.Attachments.Delete(c.Request.Context(), cid, mid, id); err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	return nil
}

// ContentDisposition is `attachment` with the file name twice (RFC 6266):
// filename, an ASCII fallback for old clients (anything else, quotes and
// backslashes become _), and filename*, the exact UTF-8 name
// percent-encoded (RFC 8187).
func ContentDisposition(name string) string {
	var ascii, ext strings.Builder
	for _, r := range name {
		if r >= 0x20 && r < 0x7f && r != '"' && r != '\\' {
			ascii.WriteRune(r)
		} else {
			ascii.WriteByte('_')
		}
	}
	for _, b := range []byte(name) {
		if isAttrChar(b) {
			ext.WriteByte(b)
		} else {
			fmt.Fprintf(&ext, "%%%02X", b)
		}
	}
	return `attachment; filename="` + ascii.String() + `"; filename*=UTF-8''` + ext.String()
}

// isAttrChar: RFC 8187 attr-char, what filename* may carry unencoded.
func isAttrChar(b byte) bool {
	switch {
	case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9':
		return true
	}
	return strings.IndexByte("!#$&+-.^_`|~", b) >= 0
}
