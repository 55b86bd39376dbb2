package importer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/pkg/natstest"
	"supportplatform.dev/pkg/postgres/pgtest"
	"supportplatform.dev/pkg/randid"
	"supportplatform.dev/services/mail/internal/importer"
	"supportplatform.dev/services/mail/internal/mail"
	"supportplatform.dev/services/mail/internal/postgres"
	"supportplatform.dev/services/mail/internal/queue"
	"supportplatform.dev/services/mail/internal/seed"
)

// fakeGraph is one folder of one mailbox behind the importer's Graph
// interface. Its delta links are "delta:<n>" (the messages from the n-th
// on are new) and its next links "next:<from>:<upto>".
type fakeGraph struct {
	mu       sync.Mutex
	messages []importer.Message
	changes  map[string]importer.MessageChange // overrides of a message's delta entry
	atts     map[string][]importer.Attachment
	content  map[string][]byte // by attachment id
	failing  map[string]error  // Message errors by id
	expired  map[string]bool   // delta links Graph forgot
	// gate, when set, holds every round's first page until it is closed.
	gate chan struct{}
	// inRound is closed at the first round's first call.
	inRound chan struct{}

	rounds      []time.Time // the Since of every round's first call
	queries     []importer.DeltaQuery
	contentGets int
	active      int // rounds between their first and last page
	overlaps    int
	roundSeq    []int64
	seq         func() int64
	delay       time.Duration
}

func newFakeGraph() *fakeGraph {
	return &fakeGraph{changes: map[string]importer.MessageChange{}, atts: map[string][]importer.Attachment{},
		content: map[string][]byte{}, failing: map[string]error{}, expired: map[string]bool{}, inRound: make(chan struct{})}
}

// add appends a received mail.
func (g *fakeGraph) add(m importer.Message) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.messages = append(g.messages, m)
}

func (g *fakeGraph) roundCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.rounds)
}

func (g *fakeGraph) MessagesDelta(ctx context.Context, tenant string, q importer.DeltaQuery, link string) (importer.DeltaPage, error) {
	if tenant != "contoso.onmicrosoft.com" || q.Mailbox != "support@contoso.com" {
		return importer.DeltaPage{}, fmt.Errorf("fake graph: tenant %q mailbox %q", tenant, q.Mailbox)
	}
	g.mu.Lock()
	var from, upto int
	switch {
	case link == "" || strings.HasPrefix(link, "delta:"):
		if g.expired[link] {
			g.mu.Unlock()
			return importer.DeltaPage{}, fmt.Errorf("fake: %w", importer.ErrSyncStateNotFound)
		}
		if link != "" {
			from, _ = strconv.Atoi(strings.TrimPrefix(link, "delta:"))
		}
		upto = len(g.messages)
		g.rounds = append(g.rounds, q.Since)
		g.queries = append(g.queries, q)
		if g.seq != nil {
			g.roundSeq = append(g.roundSeq, g.seq())
		}
		g.active++
		if g.active > 1 {
			g.overlaps++
		}
		if len(g.rounds) == 1 {
			close(g.inRound)
		}
		gate, delay := g.gate, g.delay
		g.mu.Unlock()
		if gate != nil {
			select {
			case <-gate:
			case <-ctx.Done():
				g.endRound()
				return importer.DeltaPage{}, ctx.Err()
			}
		}
		if delay > 0 {
			time.Sleep(delay) // widens the window in which two rounds could overlap
		}
		g.mu.Lock()
	default:
		parts := strings.Split(link, ":")
		from, _ = strconv.Atoi(parts[1])
		upto, _ = strconv.Atoi(parts[2])
	}
	defer g.mu.Unlock()
	size := q.PageSize
	if size <= 0 {
		size = 1000
	}
	var page importer.DeltaPage
	end := min(from+size, upto)
	for _, m := range g.messages[from:end] {
		if !q.Since.IsZero() && link == "" && m.ReceivedDateTime.Before(q.Since) {
			continue
		}
		c, ok := g.changes[m.ID]
		if !ok {
			c = importer.MessageChange{ID: m.ID, ReceivedDateTime: m.ReceivedDateTime, From: m.From, Subject: m.Subject}
		}
		page.Messages = append(page.Messages, c)
	}
	if end < upto {
		page.NextLink = fmt.Sprintf("next:%d:%d", end, upto)
	} else {
		page.DeltaLink = fmt.Sprintf("delta:%d", upto)
		g.active--
	}
	return page, nil
}

func (g *fakeGraph) endRound() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.active--
}

// errNotFound is Graph's 404 as graph.ImportSource classes it.
var errNotFound = providerErr(importer.ErrNotFound, "fake graph: status 404 ErrorItemNotFound")

func providerErr(class error, text string) error {
	return &importer.ProviderError{Class: class, Err: errors.New(text)}
}

// errServer is a failure the import does not class: it fails the round.
func errServer(status int) error { return fmt.Errorf("fake graph: status %d", status) }

func (g *fakeGraph) Message(_ context.Context, _, mailbox, id string) (importer.Message, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.failing[id]; err != nil {
		return importer.Message{}, err
	}
	for _, m := range g.messages {
		if m.ID == id {
			return m, nil
		}
	}
	return importer.Message{}, errNotFound
}

func (g *fakeGraph) Attachments(_ context.Context, _, _, messageID string) ([]importer.Attachment, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.atts[messageID], nil
}

func (g *fakeGraph) AttachmentContent(_ context.Context, _, _, _, attachmentID string) (io.ReadCloser, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	b, ok := g.content[attachmentID]
	if !ok {
		return nil, errNotFound
	}
	g.contentGets++
	return io.NopCloser(bytes.NewReader(b)), nil
}

// env is a test's NATS (in-process server, unique prefix) and PostgreSQL
// (fresh database with the mail migrations).
type env struct {
	bus   *natsbus.Bus
	pool  *pgxpool.Pool
	store *postgres.Store
	blobs *importer.ObjectBlobs
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	bus, err := natsbus.Connect(natstest.Start(t), "importreply", contracts.Names{Prefix: "imp" + randid.Hex(4)}, discard())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bus.Close(context.Background()) })
	if err := bus.EnsureMailInboundStream(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := queue.New(ctx, bus); err != nil {
		t.Fatal(err)
	}
	blobs, err := importer.OpenBlobs(ctx, bus.JS, bus.Names.Stream(contracts.BucketMailAttachments), bus.Names.StreamReplicas(), nil)
	if err != nil {
		t.Fatal(err)
	}
	pool := pgtest.NewSchema(t, postgres.Schema, postgres.Migrations())
	return &env{bus: bus, pool: pool, store: postgres.New(pool, time.Now), blobs: blobs}
}

// folder makes a live Microsoft 365 channel of customer 1 with one folder
// and returns the folder's target.
func (e *env) folder(t *testing.T) importer.Target {
	t.Helper()
	ctx := context.Background()
	in, err := mail.ChannelInput{Name: "Support", Kind: mail.KindEmail, EmailAddress: "Support@Contoso.com",
		Provider: mail.ProviderMicrosoft365, ProviderTenantID: "contoso.onmicrosoft.com", AutoRetrieveEmails: true,
		Folders: []mail.FolderInput{{ExternalFolderID: "inbox", AutoRetrieveEmails: true}}}.Normalize(true)
	if err != nil {
		t.Fatal(err)
	}
	seed.ConnectTenant(t, e.pool, 1, in.ProviderTenantID)
	c, err := e.store.CreateChannel(ctx, 1, in)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := e.store.AllFolders(ctx, 1, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := e.store.ImportTarget(ctx, 1, c.ID, fs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// mails returns what MAIL_INBOUND holds, in order, with each message's
// Nats-Msg-Id.
func (e *env) mails(t *testing.T) ([]contracts.InboundMail, []string) {
	t.Helper()
	ctx := context.Background()
	st, err := e.bus.JS.Stream(ctx, e.bus.Names.Stream(contracts.StreamMailInbound))
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []contracts.InboundMail
	var ids []string
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		var in contracts.InboundMail
		if err := json.Unmarshal(m.Data, &in); err != nil {
			t.Fatal(err)
		}
		if m.Subject != e.bus.Names.Subject(contracts.MailInboundSubject(in.ChannelID)) {
			t.Fatalf("subject %s", m.Subject)
		}
		out = append(out, in)
		ids = append(ids, m.Header.Get(jetstream.MsgIDHeader))
	}
	return out, ids
}

// importer returns an importer on e with g.
func (e *env) importer(g importer.Graph, now func() time.Time) *importer.Importer {
	return importer.New(importer.Options{Graph: g, Blobs: e.blobs, Publisher: e.bus, PageSize: 3,
		AttachmentMaxBytes: 1 << 20, Now: now, Log: discard()})
}
