package postgres_test

import (
	"context"
	"errors"
	"testing"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/services/mail/internal/mail"
	"supportplatform.dev/services/mail/internal/postgres"
)

// Issue 22, item 7: the tenant a Graph call is made for is chosen in these
// queries, and only a tenant connected to the channel's customer is ever
// chosen. A channel whose connection is gone (or was never made) gets no
// tenant, is not importable, and its subscriptions are neither renewed
// nor created.
func TestGraphTenantOnlyWhenConnected(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	c, fs := mustMailChannel(t, s, 1, "support@contoso.com", true, "inbox")
	if !c.TenantConnected {
		t.Fatal("a seeded channel's tenant is not connected")
	}
	if tenant, err := c.GraphTenant(); err != nil || tenant != "c1.contoso.onmicrosoft.com" {
		t.Fatalf("GraphTenant %q %v", tenant, err)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM provider_connections WHERE customer_id = 1`); err != nil {
		t.Fatal(err)
	}
	got, err := s.Channel(ctx, 1, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.TenantConnected || got.Subscribable() {
		t.Errorf("channel %+v is still connected", got)
	}
	if _, err := got.GraphTenant(); err == nil {
		t.Error("GraphTenant chose a tenant that is not connected")
	}
	tg, err := s.ImportTarget(ctx, 1, c.ID, fs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if tg.TenantID != "" || tg.Importable {
		t.Errorf("import target %+v: a tenant that is not connected was chosen", tg)
	}
	// The tenant of another customer is not this one's either.
	seedOther(t, s, 2, "c1.contoso.onmicrosoft.com")
	if got, _ := s.Channel(ctx, 1, c.ID); got.TenantConnected {
		t.Error("another customer's connection counts for this channel")
	}
	if tg, _ := s.ImportTarget(ctx, 1, c.ID, fs[0].ID); tg.TenantID != "" {
		t.Errorf("import target %+v took another customer's tenant", tg)
	}
}

func seedOther(t *testing.T, s *postgres.Store, customerID int64, tenant string) {
	t.Helper()
	if _, err := poolOf(s).Exec(context.Background(), `INSERT INTO provider_connections (customer_id, status, tenant_id, started_by, connected_at)
		VALUES ($1, 'connected', $2, 0, now())`, customerID, tenant); err != nil {
		t.Fatal(err)
	}
}

// A mailbox is unique among the live microsoft365 channels of all
// customers; a deleted channel frees it.
func TestMailboxUniqueAcrossCustomers(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	c, _ := mustMailChannel(t, s, 1, "shared@contoso.com", true, "inbox")
	in, err := mail.ChannelInput{Name: "Theirs", Kind: mail.KindEmail, EmailAddress: "Shared@Contoso.com",
		Provider: mail.ProviderMicrosoft365, ProviderTenantID: "c2.contoso.onmicrosoft.com"}.Normalize(true)
	if err != nil {
		t.Fatal(err)
	}
	seedOther(t, s, 2, "c2.contoso.onmicrosoft.com")
	_, err = s.CreateChannel(ctx, 2, in)
	var ae *apperr.Error
	if apperr.CodeOf(err) != apperr.Conflict || !errors.As(err, &ae) || ae.Fields["emailAddress"] == "" {
		t.Fatalf("second customer's channel on the mailbox: %v, want 409 on emailAddress", err)
	}
	// Without a provider the address is the customer's own business.
	in.Provider, in.ProviderTenantID = mail.ProviderNone, ""
	if _, err := s.CreateChannel(ctx, 2, in); err != nil {
		t.Fatalf("a channel without provider: %v", err)
	}
	if _, err := s.DeleteChannel(ctx, 1, c.ID); err != nil {
		t.Fatal(err)
	}
	in.Provider, in.ProviderTenantID, in.EmailAddress = mail.ProviderMicrosoft365, "c2.contoso.onmicrosoft.com", "shared@contoso.com"
	in.Name = "Theirs now"
	if _, err := s.CreateChannel(ctx, 3, in); err != nil && apperr.CodeOf(err) == apperr.Conflict {
		t.Fatalf("the mailbox is still taken after the channel's deletion: %v", err)
	}
}
