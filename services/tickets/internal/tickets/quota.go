package tickets

import (
	"errors"
	"fmt"

	"supportplatform.dev/pkg/apperr"
)

// DefaultAttachmentQuota is the attachment storage of one customer
// (ATTACHMENT_QUOTA_BYTES): 1 GiB.
const DefaultAttachmentQuota = 1 << 30

// ErrQuota is in the chain of an error refusing bytes over the customer's
// attachment quota.
var ErrQuota = errors.New("attachment quota exceeded")

// SkipQuota is the reason a mail's attachment was not stored because the
// customer's attachment quota was full.
const SkipQuota = "quota"

// CheckQuota refuses size more bytes for a customer whose attachments use
// used bytes of limit: a TooLarge error (413) naming the figures, both in
// its text and as the problem's "quota" member {used, limit, size}.
func CheckQuota(used, limit, size int64) error {
	if used+size <= limit {
		return nil
	}
	return &apperr.Error{Code: apperr.TooLarge, Err: ErrQuota,
		Message: fmt.Sprintf("the attachment storage quota is full: the customer's attachments use %d of %d bytes, and %d more do not fit; delete attachments or ask for a larger quota",
			used, limit, size),
		Extensions: map[string]any{"quota": QuotaFigures{Used: used, Limit: limit, Size: size}}}
}

// QuotaFigures are the figures of a refusal over the quota.
type QuotaFigures struct {
	Used  int64 `json:"used"`
	Limit int64 `json:"limit"`
	Size  int64 `json:"size"`
}

// QuotaFits is the quota check of limit for the store to call on the
// figure it reads under its lock: used counts the size bytes already.
func QuotaFits(limit int64) func(used, size int64) error {
	return func(used, size int64) error { return CheckQuota(used-size, limit, size) }
}
