package postgres_test

import (
	"context"
	"io/fs"
	"testing"
	"testing/fstest"

	pgpkg "supportplatform.dev/pkg/postgres"
	"supportplatform.dev/pkg/postgres/pgtest"
	"supportplatform.dev/services/mail/internal/postgres"
)

// Issue 22, item 6: what the upgrade does with existing channels. No
// tenant is connected before it, so every live microsoft365 channel is
// switched off (subscriptions retired) and listed; of live microsoft365
// channels of several customers on one mailbox, the oldest keeps it and the
// others lose their provider.
func TestMigration006SwitchesOffUnconnectedChannels(t *testing.T) {
	ctx := context.Background()
	before := fstest.MapFS{}
	all := postgres.Migrations()
	entries, err := fs.ReadDir(all, ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() >= "006" {
			continue
		}
		data, err := fs.ReadFile(all, e.Name())
		if err != nil {
			t.Fatal(err)
		}
		before[e.Name()] = &fstest.MapFile{Data: data}
	}
	pool := pgtest.NewSchema(t, postgres.Schema, before)
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	id := func(sql string, args ...any) int64 {
		t.Helper()
		var v int64
		if err := pool.QueryRow(ctx, sql, args...).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	channel := `INSERT INTO channels (customer_id, name, kind, email_address, provider, provider_tenant_id, auto_retrieve_emails)
		VALUES ($1, 'c', 'email', $2, $3, $4, true) RETURNING channel_id`
	first := id(channel, 1, "shared@contoso.com", "microsoft365", "contoso.onmicrosoft.com")
	second := id(channel, 2, "shared@contoso.com", "microsoft365", "fabrikam.onmicrosoft.com")
	own := id(channel, 3, "own@contoso.com", "microsoft365", "tailspin.onmicrosoft.com")
	plain := id(channel, 4, "shared@contoso.com", "none", "")
	gone := id(channel, 5, "shared@contoso.com", "microsoft365", "contoso.onmicrosoft.com")
	exec(`UPDATE channels SET is_deleted = true WHERE channel_id = $1`, gone)
	for i, c := range []int64{first, second, own, plain} {
		exec(`INSERT INTO channel_folders (customer_id, channel_id, external_folder_id, auto_retrieve_emails, provider_subscription_id, client_state)
			SELECT customer_id, channel_id, 'inbox', true, $2, 'secret' FROM channels WHERE channel_id = $1`, c, "sub-"+string(rune('a'+i)))
	}

	if _, err := pgpkg.Migrate(ctx, pool, postgres.Schema, all); err != nil {
		t.Fatal(err)
	}

	type row struct {
		provider, tenant string
		auto             bool
		subscription     *string
		reason           *string
	}
	read := func(c int64) row {
		t.Helper()
		var r row
		if err := pool.QueryRow(ctx, `SELECT c.provider, c.provider_tenant_id, c.auto_retrieve_emails, f.provider_subscription_id, s.reason
			FROM channels c JOIN channel_folders f ON f.channel_id = c.channel_id LEFT JOIN channel_suspensions s ON s.channel_id = c.channel_id
			WHERE c.channel_id = $1`, c).Scan(&r.provider, &r.tenant, &r.auto, &r.subscription, &r.reason); err != nil {
			t.Fatal(err)
		}
		return r
	}
	for name, c := range map[string]int64{"oldest on the shared mailbox": first, "own mailbox": own} {
		r := read(c)
		if r.provider != "microsoft365" || r.auto || r.subscription != nil || r.reason == nil {
			t.Errorf("%s: %+v, want kept, switched off, retired, listed", name, r)
		}
	}
	if r := read(second); r.provider != "none" || r.tenant != "" || r.auto || r.subscription != nil || r.reason == nil {
		t.Errorf("younger channel on the shared mailbox: %+v, want without provider, listed", r)
	}
	if r := read(plain); r.provider != "none" || !r.auto || r.subscription == nil || r.reason != nil {
		t.Errorf("channel without provider: %+v, want untouched", r)
	}
	var retired []string
	rows, err := pool.Query(ctx, `SELECT provider_subscription_id FROM retired_subscriptions ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		_ = rows.Scan(&s)
		retired = append(retired, s)
	}
	if len(retired) != 3 || retired[0] != "sub-a" || retired[1] != "sub-b" || retired[2] != "sub-c" {
		t.Errorf("retired %v, want the three microsoft365 channels' subscriptions", retired)
	}
	// The new index holds: a second live microsoft365 channel on the mailbox is refused.
	if _, err := pool.Exec(ctx, channel, 6, "shared@contoso.com", "microsoft365", "x.onmicrosoft.com"); !pgpkg.UniqueViolation(err, "channels_m365_mailbox_key") {
		t.Errorf("second live microsoft365 channel on the mailbox: %v", err)
	}
}
