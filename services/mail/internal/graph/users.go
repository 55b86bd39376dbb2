package graph

import (
	"context"
	"fmt"
	"net/http"
	"strings"
)

// User is the Entra user behind a mailbox address.
type User struct {
	// ID is the user's object id: what every mail path and subscription resource names the
	// mailbox by, whatever address the channel was given.
	ID, UserPrincipalName, Mail string
}

const userSelect = "id,userPrincipalName,mail"

// ResolveUser finds the user whose mailbox address is address. Graph's mail paths take only the
// user's id or userPrincipalName (an alias answers 404 ErrorInvalidUser), so the address is
// looked up once: GET /users/{address} (a UPN), and when that is 404, the user with the address
// among its proxyAddresses (a primary SMTP address other than the UPN, or an alias). IsNotFound
// when no user has it. The app needs User.Read.All (application) for both.
func (c *Client) ResolveUser(ctx context.Context, tenantID, address string) (User, error) {
	const op = "resolve user"
	address = strings.TrimSpace(address)
	if address == "" || strings.ContainsAny(address, "/?#\\") {
		return User{}, fmt.Errorf("graph: %s: %w: address %q", op, ErrInvalid, address)
	}
	var u struct {
		ID                string `json:"id"`
		UserPrincipalName string `json:"userPrincipalName"`
		Mail              string `json:"mail"`
	}
	err := c.call(ctx, c.callTimeout, tenantID, op, http.MethodGet, c.userURL(address)+"?$select="+userSelect, nil, &u)
	if err == nil && u.ID != "" {
		return User{ID: u.ID, UserPrincipalName: u.UserPrincipalName, Mail: u.Mail}, nil
	}
	if err != nil && !IsNotFound(err) {
		return User{}, err
	}
	filter := "proxyAddresses/any(x:x eq '" + strings.ReplaceAll("smtp:"+address, "'", "''") + "')"
	var list struct {
		Value []struct {
			ID                string `json:"id"`
			UserPrincipalName string `json:"userPrincipalName"`
			Mail              string `json:"mail"`
		} `json:"value"`
	}
	rawURL := c.baseURL + "/users?$filter=" + queryEscape(filter) + "&$select=" + userSelect
	if err := c.call(ctx, c.callTimeout, tenantID, op, http.MethodGet, rawURL, nil, &list); err != nil {
		return User{}, err
	}
	switch {
	case len(list.Value) == 0:
		return User{}, &Error{Op: op, Status: http.StatusNotFound, Code: "Request_ResourceNotFound",
			Message: "no user has the address " + address}
	case len(list.Value) > 1 || list.Value[0].ID == "":
		return User{}, fmt.Errorf("graph: %s: %w: %d users have the address %s", op, ErrMalformedReply, len(list.Value), address)
	}
	v := list.Value[0]
	return User{ID: v.ID, UserPrincipalName: v.UserPrincipalName, Mail: v.Mail}, nil
}
