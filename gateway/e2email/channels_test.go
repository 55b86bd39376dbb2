package e2email

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

func TestChannelsCreateReadList(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	c := client(t)
	body := emailChannel(t, tn, false)
	body["emailAddress"] = "  Support-Desk@Contoso.TEST "
	ch := createChannel(t, tn, body)
	if ch.Kind != "email" || ch.EmailAddress == nil || *ch.EmailAddress != "support-desk@contoso.test" ||
		ch.Provider != "microsoft365" || ch.CustomerID != tn.CustomerID || ch.IsDeleted || ch.AutoRetrieveEmails {
		t.Fatalf("created %+v", ch)
	}
	// A new e-mail channel gets the inbox.
	fs := folders(t, tn, ch.ChannelID)
	if len(fs) != 1 || fs[0].ExternalFolderID != "inbox" || fs[0].ProviderSubscriptionID != nil || fs[0].ChannelID != ch.ChannelID {
		t.Fatalf("folders %+v", fs)
	}
	web := createChannel(t, tn, map[string]any{"name": "Web chat", "kind": "web"})
	if web.EmailAddress != nil || web.Provider != "none" || len(folders(t, tn, web.ChannelID)) != 0 {
		t.Fatalf("web channel %+v", web)
	}
	withFolders := emailChannel(t, tn, false)
	withFolders["provider"], withFolders["providerTenantID"] = "none", nil
	withFolders["folders"] = []map[string]any{{"externalFolderID": "AAMkAGI2TG93AAA=", "displayName": "Support"}, {"externalFolderID": "archive"}}
	wf := createChannel(t, tn, withFolders)
	if fs := folders(t, tn, wf.ChannelID); len(fs) != 2 || fs[0].ExternalFolderID != "AAMkAGI2TG93AAA=" || fs[1].ExternalFolderID != "archive" {
		t.Fatalf("listed folders %+v", fs)
	}

	var got channelBody
	wantStatus(t, c.Do(http.MethodGet, fmt.Sprintf("/api/channels/%d", ch.ChannelID), tn.AgentToken, nil), http.StatusOK, &got)
	if !reflect.DeepEqual(got, ch) {
		t.Fatalf("get %+v, created %+v", got, ch)
	}
	var l listBody[channelBody]
	wantStatus(t, c.Do(http.MethodGet, "/api/Channels?pageSize=2", tn.AgentToken, nil), http.StatusOK, &l)
	if l.TotalCount != 3 || l.TotalPages != 2 || len(l.Items) != 2 || l.Items[0].ChannelID != ch.ChannelID {
		t.Fatalf("list %+v", l)
	}
	wantStatus(t, c.Do(http.MethodGet, "/api/Channels?kind=web", tn.AgentToken, nil), http.StatusOK, &l)
	if l.TotalCount != 1 || l.Items[0].ChannelID != web.ChannelID {
		t.Fatalf("kind=web %+v", l)
	}
	wantStatus(t, c.Do(http.MethodGet, "/api/Channels?kind=fax", tn.AgentToken, nil), http.StatusBadRequest, nil)
	wantStatus(t, c.Do(http.MethodGet, "/api/Channels?isDeleted=maybe", tn.AgentToken, nil), http.StatusBadRequest, nil)
	wantStatus(t, c.Do(http.MethodGet, "/api/Channels?pageSize=101", tn.AgentToken, nil), http.StatusBadRequest, nil)
}

func TestChannelsValidation(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	c := client(t)
	tests := []struct {
		name  string
		body  any
		field string
	}{
		{"no name", map[string]any{"kind": "web"}, "name"},
		{"blank name", map[string]any{"name": "  ", "kind": "web"}, "name"},
		{"no kind", map[string]any{"name": "x"}, "kind"},
		{"unknown kind", map[string]any{"name": "x", "kind": "fax"}, "kind"},
		{"email without address", map[string]any{"name": "x", "kind": "email"}, "emailAddress"},
		{"two addresses", map[string]any{"name": "x", "kind": "email", "emailAddress": "a@b.test, c@d.test"}, "emailAddress"},
		{"display name", map[string]any{"name": "x", "kind": "email", "emailAddress": "Desk <a@b.test>"}, "emailAddress"},
		{"not an address", map[string]any{"name": "x", "kind": "email", "emailAddress": "desk"}, "emailAddress"},
		{"unknown provider", map[string]any{"name": "x", "kind": "email", "emailAddress": "a@b.test", "provider": "gmail"}, "provider"},
		{"m365 without tenant", map[string]any{"name": "x", "kind": "email", "emailAddress": "a@b.test", "provider": "microsoft365"}, "providerTenantID"},
		{"bad tenant", map[string]any{"name": "x", "kind": "email", "emailAddress": "a@b.test", "provider": "microsoft365", "providerTenantID": "not a tenant"}, "providerTenantID"},
		{"web with provider", map[string]any{"name": "x", "kind": "web", "provider": "microsoft365", "providerTenantID": providerTenant}, "provider"},
		{"web retrieves", map[string]any{"name": "x", "kind": "web", "autoRetrieveEmails": true}, "autoRetrieveEmails"},
		{"web folders", map[string]any{"name": "x", "kind": "api", "folders": []any{map[string]any{"externalFolderID": "inbox"}}}, "folders"},
		{"folder without id", map[string]any{"name": "x", "kind": "email", "emailAddress": "a@b.test", "folders": []any{map[string]any{"displayName": "A"}}}, "folders[0].externalFolderID"},
		{"repeated folder", map[string]any{"name": "x", "kind": "email", "emailAddress": "a@b.test",
			"folders": []any{map[string]any{"externalFolderID": "inbox"}, map[string]any{"externalFolderID": "inbox"}}}, "folders[1].externalFolderID"},
		{"control character", map[string]any{"name": "a\u0007b", "kind": "web"}, "name"},
		{"long name", map[string]any{"name": strings.Repeat("n", 201), "kind": "web"}, "name"},
		{"wrong type", map[string]any{"name": 5, "kind": "web"}, "name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := client(t).Do(http.MethodPost, "/api/Channels", tn.AdminToken, tt.body)
			wantStatus(t, r, http.StatusBadRequest, nil)
			if p := r.Problem(t); p.Errors[tt.field] == "" {
				t.Fatalf("no error for %s: %+v", tt.field, p)
			}
		})
	}
	wantStatus(t, c.Do(http.MethodPost, "/api/Channels", tn.AdminToken, `{"name":`), http.StatusBadRequest, nil)
	wantStatus(t, c.Do(http.MethodPost, "/api/Channels", tn.AdminToken, "[]"), http.StatusBadRequest, nil)
	var l listBody[channelBody]
	wantStatus(t, c.Do(http.MethodGet, "/api/Channels", tn.AdminToken, nil), http.StatusOK, &l)
	if l.TotalCount != 0 {
		t.Fatalf("rejected requests stored channels: %+v", l)
	}
}

func TestChannelsUpdateDelete(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	c := client(t)
	body := emailChannel(t, tn, false)
	ch := createChannel(t, tn, body)
	path := fmt.Sprintf("/api/Channels/%d", ch.ChannelID)

	body["name"] = "Renamed"
	wantStatus(t, c.Do(http.MethodPut, path, tn.AdminToken, body), http.StatusNoContent, nil)
	var got channelBody
	wantStatus(t, c.Do(http.MethodGet, path, tn.AdminToken, nil), http.StatusOK, &got)
	if got.Name != "Renamed" || got.DateCreated != ch.DateCreated {
		t.Fatalf("after PUT %+v", got)
	}
	kind := map[string]any{"name": "x", "kind": "web"}
	r := c.Do(http.MethodPut, path, tn.AdminToken, kind)
	wantStatus(t, r, http.StatusBadRequest, nil)
	if r.Problem(t).Errors["kind"] == "" {
		t.Fatalf("kind change: %s", r.String())
	}
	// One live channel per mailbox.
	dup := emailChannel(t, tn, false)
	dup["emailAddress"] = strings.ToUpper(*ch.EmailAddress)
	wantStatus(t, c.Do(http.MethodPost, "/api/Channels", tn.AdminToken, dup), http.StatusConflict, nil)

	wantStatus(t, c.Do(http.MethodDelete, path, tn.AdminToken, nil), http.StatusNoContent, nil)
	wantStatus(t, c.Do(http.MethodGet, path, tn.AdminToken, nil), http.StatusOK, &got)
	if !got.IsDeleted {
		t.Fatalf("deleted channel %+v", got)
	}
	wantStatus(t, c.Do(http.MethodPut, path, tn.AdminToken, body), http.StatusNotFound, nil)
	wantStatus(t, c.Do(http.MethodDelete, path, tn.AdminToken, nil), http.StatusNotFound, nil)
	wantStatus(t, c.Do(http.MethodPost, path+"/folders", tn.AdminToken, map[string]any{"externalFolderID": "x"}), http.StatusNotFound, nil)
	// Its mailbox is free again.
	createChannel(t, tn, dup)
	var l listBody[channelBody]
	wantStatus(t, c.Do(http.MethodGet, "/api/Channels?isDeleted=true", tn.AdminToken, nil), http.StatusOK, &l)
	if l.TotalCount != 1 || l.Items[0].ChannelID != ch.ChannelID {
		t.Fatalf("isDeleted=true %+v", l)
	}
	wantStatus(t, c.Do(http.MethodGet, "/api/Channels?isDeleted=false", tn.AdminToken, nil), http.StatusOK, &l)
	if l.TotalCount != 1 || l.Items[0].ChannelID == ch.ChannelID {
		t.Fatalf("isDeleted=false %+v", l)
	}
}

func TestChannelFolders(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	c := client(t)
	body := emailChannel(t, tn, false)
	body["provider"], body["providerTenantID"] = "none", nil
	ch := createChannel(t, tn, body)
	base := fmt.Sprintf("/api/Channels/%d/folders", ch.ChannelID)

	r := c.Do(http.MethodPost, base, tn.AdminToken, map[string]any{"externalFolderID": "AQMkADAwATM0MDAAMS1iNTcwLWI2NTEtMDACLTAwCgAuAAAD", "displayName": "Escalations", "autoRetrieveEmails": true})
	var f folderBody
	wantStatus(t, r, http.StatusCreated, &f)
	if r.Header.Get("Location") != fmt.Sprintf("%s/%d", base, f.FolderID) || f.DisplayName != "Escalations" || !f.AutoRetrieveEmails || f.ChannelID != ch.ChannelID {
		t.Fatalf("created folder %+v at %q", f, r.Header.Get("Location"))
	}
	wantStatus(t, c.Do(http.MethodPost, base, tn.AdminToken, map[string]any{"externalFolderID": "inbox"}), http.StatusConflict, nil)
	wantStatus(t, c.Do(http.MethodPost, base, tn.AdminToken, map[string]any{"displayName": "no id"}), http.StatusBadRequest, nil)
	one := fmt.Sprintf("%s/%d", base, f.FolderID)
	wantStatus(t, c.Do(http.MethodPut, one, tn.AdminToken, map[string]any{"externalFolderID": "escalations", "displayName": "Esc"}), http.StatusNoContent, nil)
	var got folderBody
	wantStatus(t, c.Do(http.MethodGet, one, tn.AgentToken, nil), http.StatusOK, &got)
	if got.ExternalFolderID != "escalations" || got.DisplayName != "Esc" || got.AutoRetrieveEmails {
		t.Fatalf("after PUT %+v", got)
	}
	wantStatus(t, c.Do(http.MethodDelete, one, tn.AdminToken, nil), http.StatusNoContent, nil)
	wantStatus(t, c.Do(http.MethodGet, one, tn.AdminToken, nil), http.StatusNotFound, nil)
	wantStatus(t, c.Do(http.MethodDelete, one, tn.AdminToken, nil), http.StatusNotFound, nil)
	wantStatus(t, c.Do(http.MethodGet, base+"/0", tn.AdminToken, nil), http.StatusBadRequest, nil)
	wantStatus(t, c.Do(http.MethodGet, base+"/x", tn.AdminToken, nil), http.StatusBadRequest, nil)

	web := createChannel(t, tn, map[string]any{"name": "Web", "kind": "web"})
	wantStatus(t, c.Do(http.MethodPost, fmt.Sprintf("/api/Channels/%d/folders", web.ChannelID), tn.AdminToken, map[string]any{"externalFolderID": "inbox"}), http.StatusBadRequest, nil)
}

// Every role reads; only admins write; another customer's ids are 404.
func TestChannelsRolesAndTenants(t *testing.T) {
	t.Parallel()
	tn, other := newTenant(t), newTenant(t)
	c := client(t)
	ch := createChannel(t, tn, emailChannel(t, tn, false))
	path := fmt.Sprintf("/api/Channels/%d", ch.ChannelID)
	fs := folders(t, tn, ch.ChannelID)
	folder := fmt.Sprintf("%s/folders/%d", path, fs[0].FolderID)

	for _, w := range []struct{ method, path string }{
		{http.MethodPost, "/api/Channels"}, {http.MethodPut, path}, {http.MethodDelete, path},
		{http.MethodPost, path + "/folders"}, {http.MethodPut, folder}, {http.MethodDelete, folder},
		{http.MethodPost, fmt.Sprintf("/api/ProviderWebhook/subscribe/%d", ch.ChannelID)},
		{http.MethodPost, fmt.Sprintf("/api/ProviderWebhook/unsubscribe/%d", ch.ChannelID)},
	} {
		var body any
		if w.method != http.MethodDelete && !strings.Contains(w.path, "subscribe") {
			body = map[string]any{"name": "x", "kind": "web", "externalFolderID": "x"}
		}
		wantStatus(t, c.Do(w.method, w.path, tn.AgentToken, body), http.StatusForbidden, nil)
		wantStatus(t, c.Do(w.method, w.path, "", body), http.StatusUnauthorized, nil)
		if w.path != "/api/Channels" {
			wantStatus(t, c.Do(w.method, w.path, other.AdminToken, body), http.StatusNotFound, nil)
		}
	}
	for _, p := range []string{path, path + "/folders", folder} {
		wantStatus(t, c.Do(http.MethodGet, p, other.AdminToken, nil), http.StatusNotFound, nil)
		wantStatus(t, c.Do(http.MethodGet, p, tn.AgentToken, nil), http.StatusOK, nil)
	}
	var l listBody[channelBody]
	wantStatus(t, c.Do(http.MethodGet, "/api/Channels", other.AdminToken, nil), http.StatusOK, &l)
	if l.TotalCount != 0 {
		t.Fatalf("other tenant lists %+v", l)
	}
	// Nothing was changed by the refused calls.
	var got channelBody
	wantStatus(t, c.Do(http.MethodGet, path, tn.AdminToken, nil), http.StatusOK, &got)
	if !reflect.DeepEqual(got, ch) {
		t.Fatalf("after refused writes %+v, want %+v", got, ch)
	}
}
