// Package headless starts Debian's Chromium without a window for the
// browser suites (e2econsole, e2edocs) and the console budgets: one set of
// flags, one profile handling, one install step.
package headless

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/chromedp/chromedp"

	"supportplatform.dev/deploy/stack"
)

// Chromium is Debian's chromium package; no tool downloads a browser build
// of its own.
const Chromium = "/usr/bin/chromium"

// Ensure installs Debian's chromium package when Chromium is missing,
// writing apt's output to w.
func Ensure(ctx context.Context, w io.Writer) error {
	if _, err := os.Stat(Chromium); err == nil {
		return nil
	}
	return stack.AptInstall(ctx, w, "chromium")
}

// Profile makes a browser profile directory named after prefix. Its
// cleanup removes it, retrying for a few seconds: Chromium's helper
// processes may still write into it for a moment after the browser has
// closed (t.TempDir's cleanup would report that as a failure).
func Profile(prefix string) (dir string, cleanup func(), err error) {
	dir, err = os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, err
	}
	return dir, func() {
		deadline := time.Now().Add(10 * time.Second)
		for os.RemoveAll(dir) != nil && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
	}, nil
}

// Allocator is a chromedp allocator of headless Chromium with profile as
// its user data directory, a window of width x height, nothing fetched in the
// background, and the stack's development certificate accepted.
func Allocator(ctx context.Context, profile string, width, height int) (context.Context, context.CancelFunc) {
	return chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(Chromium),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.IgnoreCertErrors,
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(width, height),
	)
}
