package contracts

// The tickets context (service tickets): end users, tickets and their
// messages.

// End-user events (data EndUserChanged).
const (
	EventEndUserCreated = "end-user.created"
	EventEndUserUpdated = "end-user.updated"
	EventEndUserDeleted = "end-user.deleted"
)

// EndUserChanged is the data of the end-user events: the end user as the
// change left it (as it was, for end-user.deleted).
type EndUserChanged struct {
	EndUserID int64  `json:"endUserID"`
	Name      string `json:"name"`
	Email     string `json:"email,omitempty"`
	Language  string `json:"language,omitempty"`
}
