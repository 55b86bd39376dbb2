// Package seed is the documented setup path of the mail schema for tests
// (never used by the binaries): it records a Microsoft 365 tenant as
// connected to a customer directly in the database, as a completed
// connection flow (sign-in and admin consent, /api/ProviderConnections)
// leaves it. Tests of the flow itself use the flow.
package seed

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ConnectTenant records tenantID as connected to the customer (once; the
// test fails when another customer has it).
func ConnectTenant(t testing.TB, pool *pgxpool.Pool, customerID int64, tenantID string) {
	t.Helper()
	ctx := context.Background()
	tenantID = strings.ToLower(tenantID)
	var owner int64
	err := pool.QueryRow(ctx, `SELECT customer_id FROM provider_connections WHERE tenant_id = $1 AND status = 'connected'`, tenantID).Scan(&owner)
	switch {
	case err == nil && owner == customerID:
		return
	case err == nil:
		t.Fatalf("seed: tenant %s is connected to customer %d, not %d", tenantID, owner, customerID)
	case !errors.Is(err, pgx.ErrNoRows):
		t.Fatalf("seed: %v", err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO provider_connections (customer_id, status, tenant_id, started_by,
		signed_in_as, connected_at) VALUES ($1, 'connected', $2, 0, 'seed', now())`, customerID, tenantID); err != nil {
		t.Fatalf("seed tenant %s for customer %d: %v", tenantID, customerID, err)
	}
}
