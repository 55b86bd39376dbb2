package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"supportplatform.dev/pkg/graphfake"
	"supportplatform.dev/pkg/randid"
)

// ConnectMicrosoft365 connects a fresh Entra tenant of the fake Graph g to
// the customer of the admin whose requests authorize signs, through the
// platform's real flow as a browser walks it: POST /api/ProviderConnections,
// the fake's sign-in page (auto-approved for a new admin user of the new
// tenant), the platform's callback, the fake's admin consent page, the
// callback again. It returns the tenant id, which the customer's
// microsoft365 channels may then name. It turns the fake's auto-approval on.
func ConnectMicrosoft365(ctx context.Context, hc *http.Client, baseURL string, authorize func(*http.Request), g *graphfake.Server) (string, error) {
	tenant := newTenantID()
	user := "admin@" + strings.ReplaceAll(tenant[:8], "-", "") + ".onmicrosoft.test"
	g.AddUser(graphfake.User{Username: user, Name: "Tenant admin", TenantID: tenant})
	g.SetAutoApprove(true)
	noRedirect := *hc
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	get := func(url string, req *http.Request) (*http.Response, []byte, error) {
		if req == nil {
			var err error
			if req, err = http.NewRequestWithContext(ctx, http.MethodGet, url, nil); err != nil {
				return nil, nil, err
			}
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp, body, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/api/ProviderConnections",
		strings.NewReader(`{"provider":"microsoft365","loginHint":"`+user+`"}`))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	authorize(req)
	resp, body, err := get("", req)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("start connection: %d %.300s", resp.StatusCode, body)
	}
	var started struct {
		AuthorizationURL string `json:"authorizationUrl"`
	}
	if err := json.Unmarshal(body, &started); err != nil || started.AuthorizationURL == "" {
		return "", fmt.Errorf("start connection: no authorizationUrl in %.300s", body)
	}
	// Sign-in page → callback → consent page → callback.
	next := started.AuthorizationURL
	for step := range 4 {
		resp, body, err := get(next, nil)
		if err != nil {
			return "", err
		}
		if step == 3 {
			var done struct {
				Status           string `json:"status"`
				ProviderTenantID string `json:"providerTenantID"`
			}
			if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &done) != nil || done.Status != "connected" || done.ProviderTenantID != tenant {
				return "", fmt.Errorf("connection not completed: %d %.300s", resp.StatusCode, body)
			}
			return tenant, nil
		}
		if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") == "" {
			return "", fmt.Errorf("connection step %d (%s): %d %.300s", step, strings.SplitN(next, "?", 2)[0], resp.StatusCode, body)
		}
		next = resp.Header.Get("Location")
	}
	return "", fmt.Errorf("connection flow did not end")
}

// newTenantID is a random GUID, the shape of an Entra tenant id.
func newTenantID() string {
	h := randid.Hex(16)
	return h[0:8] + "-" + h[8:12] + "-4" + h[13:16] + "-8" + h[17:20] + "-" + h[20:32]
}
