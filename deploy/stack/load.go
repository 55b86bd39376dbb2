package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"supportplatform.dev/pkg/randid"
)

// Prepare is how a command that runs the stack from the checkout begins
// (make bench, make soak): it finds the repository root above the working
// directory, makes sure PostgreSQL, Redis and NATS answer, and builds the
// service binaries and Traefik into root/bin, saying so on out with the
// build's own output on log. It returns the root and the services built.
func Prepare(ctx context.Context, out, log io.Writer) (root string, built []string, err error) {
	if root, err = FindRepoRoot("."); err != nil {
		return "", nil, err
	}
	if err := EnsureInfra(ctx); err != nil {
		return "", nil, err
	}
	fmt.Fprintln(out, "building...")
	if built, err = Build(ctx, root, filepath.Join(root, "bin"), log); err != nil {
		return "", nil, err
	}
	return root, built, nil
}

// Missing names the services of need that are not in built, comma
// separated ("" when every one was built).
func Missing(need, built []string) string {
	var missing []string
	for _, n := range need {
		found := false
		for _, b := range built {
			found = found || b == n
		}
		if !found {
			missing = append(missing, n)
		}
	}
	return strings.Join(missing, ", ")
}

// LoadOptions configures StartLoad.
type LoadOptions struct {
	// Name is the run's ("bench", "soak"): the prefix of its data directory
	// and the name of its demo customer and admin.
	Name     string
	RepoRoot string
	Services []string
	// ExtraRoutes are added to the gateway (the bench's static baseline).
	ExtraRoutes []Route
	Log         io.Writer // nil: the processes write their log files only
	LogLevel    string
	// Env adds variables per service (make soak's -env).
	Env map[string][]string
	// NATSNodes is Options.NATSNodes: 3 runs against a NATS cluster.
	NATSNodes int
	// GatewayDebug serves Traefik's pprof (Options.GatewayDebug).
	GatewayDebug bool
}

// LoadStack is a stack started for a load run; its Demo is the admin the
// run logs in as.
type LoadStack struct {
	*Stack
	// Graph is the fake Microsoft Graph the mail services use.
	Graph   *FakeGraph
	dataDir string
}

// StartLoad starts a whole stack for a load run: a fresh data directory and
// database, the fake Microsoft Graph for the mail services (it trusts the
// data directory's dev CA), a demo customer and admin with a generated
// password, and the gateway's rate limit kept on the path (the production
// middleware) but far above any load. Close stops it all.
func StartLoad(ctx context.Context, opts LoadOptions) (_ *LoadStack, err error) {
	if opts.Name == "" {
		return nil, errors.New("stack: a load run needs a name")
	}
	dataDir, err := os.MkdirTemp("", "sp-"+opts.Name+"-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dataDir)
		}
	}()
	graph, err := StartFakeGraph(dataDir, "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			graph.Close()
		}
	}()
	title := strings.ToUpper(opts.Name[:1]) + opts.Name[1:]
	demo := &Account{Customer: title + " Company", Email: opts.Name + "@example.com",
		Password: opts.Name + "-" + randid.Hex(12), Name: title + " Admin"}
	env := map[string][]string{"mailingest": graph.Env, "renewal": graph.Env, "importreply": graph.Env}
	for svc, vars := range opts.Env {
		env[svc] = append(slices.Clone(env[svc]), vars...)
	}
	st, err := Start(ctx, Options{
		RepoRoot:     opts.RepoRoot,
		DataDir:      dataDir,
		Services:     opts.Services,
		Demo:         demo,
		Env:          env,
		RateLimit:    RateLimit{Average: 1_000_000, Period: time.Second, Burst: 1_000_000},
		ExtraRoutes:  opts.ExtraRoutes,
		Log:          opts.Log,
		LogLevel:     opts.LogLevel,
		NATSNodes:    opts.NATSNodes,
		GatewayDebug: opts.GatewayDebug,
	})
	if err != nil {
		return nil, err
	}
	return &LoadStack{Stack: st, Graph: graph, dataDir: dataDir}, nil
}

// Close stops the stack and the fake Graph and removes the data directory.
func (l *LoadStack) Close() error {
	err := l.Stop()
	err = errors.Join(err, l.Graph.Close())
	return errors.Join(err, os.RemoveAll(l.dataDir))
}
