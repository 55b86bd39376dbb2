package boot

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// RunFunc is a binary's run: its whole life, given the process's arguments,
// environment and standard output, until ctx ends (SIGINT or SIGTERM).
type RunFunc func(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error

// Main is every binary's main: it runs run with a context that ends on
// SIGINT or SIGTERM and exits with status 1, printing "name: error" to
// standard error, when run fails.
func Main(name string, run RunFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args, os.Getenv, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}
