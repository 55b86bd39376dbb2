package contracts

// Account lookups answered by auth (queue group QueueAuth).
const RPCAccounts = "rpc.auth.accounts"

// MaxAccountIDs is the most account ids one AccountsRequest may name.
const MaxAccountIDs = 1000

// AccountsRequest asks auth for accounts of one customer. With AccountIDs
// empty it asks for every enabled account of the customer whose role is
// admin or agent (the people a ticket can be assigned to); with ids it asks
// for those accounts, whatever their role.
type AccountsRequest struct {
	CustomerID int64   `json:"customerID"`
	AccountIDs []int64 `json:"accountIDs,omitempty"`
}

// AccountSummary is what other services may know of an account.
type AccountSummary struct {
	AccountID int64  `json:"accountID"`
	Name      string `json:"name"`
	Email     string `json:"email"`
	Role      string `json:"role"`
	Available bool   `json:"available"`
}

// AccountsReply answers AccountsRequest, ordered by account id. Only the
// customer's enabled accounts are listed: an unknown id, another customer's
// account or a disabled one is simply absent.
type AccountsReply struct {
	Accounts []AccountSummary `json:"accounts"`
}
