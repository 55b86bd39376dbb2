// Command gencompose writes the files of the docker-compose and Kubernetes
// deployments that derive from the service table
// (deploy/stack/services.go): the Traefik static and dynamic configuration
// under deploy/compose/traefik/, one Dockerfile per service, the NATS
// server's users with their subject permissions
// (deploy/compose/nats/nats.conf, from the table in pkg/contracts), and the
// Traefik ConfigMaps of deploy/k8s/base/traefik/ (configuration and local
// plugins). With -check it writes nothing and fails when a committed file
// differs from a fresh generation.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"

	"supportplatform.dev/deploy/stack"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "gencompose:", err)
		os.Exit(1)
	}
}

func run(_ context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("gencompose", flag.ContinueOnError)
	check := fs.Bool("check", false, "only compare the committed files with a fresh generation")
	if err := fs.Parse(args); err != nil {
		return err
	}
	root, err := stack.FindRepoRoot(".")
	if err != nil {
		return err
	}
	files, err := stack.GenerateComposeFiles(root)
	if err != nil {
		return err
	}
	k8s, err := stack.GenerateK8sFiles(root)
	if err != nil {
		return err
	}
	maps.Copy(files, k8s)
	stale := stack.StaleFiles(root, files)
	if *check {
		if len(stale) > 0 {
			return fmt.Errorf("out of date (run `go run ./cmd/gencompose` in deploy/): %v", stale)
		}
		return nil
	}
	for _, rel := range stale {
		path := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, files[rel], 0o644); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "wrote", rel)
	}
	return nil
}
