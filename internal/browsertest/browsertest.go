// Package browsertest starts a real headless Chromium for tests that
// drive a page through github.com/chromedp/chromedp: it finds the
// browser (skipping the test when there is none), opens a tab with a
// fresh profile, and writes screenshots when asked. It is for tests
// only.
//
// The browser is Debian's chromium package, or the binary named by
// EDGEPLANE_CHROMIUM; .ci/run installs it.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Chromium returns the browser's path, or skips t when there is none.
func Chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("EDGEPLANE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "/usr/bin/chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium is not installed, so the browser tests do not run (apt-get install -y chromium; .ci/run installs it)")
	return ""
}

// NewTab starts a headless Chromium with a fresh profile and a window
// of width×height, and returns a tab's context, bounded by timeout. The
// test's end closes the browser.
func NewTab(t testing.TB, timeout time.Duration, width, height int) context.Context {
	t.Helper()
	path := Chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	ctx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
	)
	t.Cleanup(cancelAlloc)
	ctx, cancelTab := chromedp.NewContext(ctx)
	t.Cleanup(cancelTab)
	return ctx
}

// Shot writes a PNG of the tab's whole page (beyond the window, so that
// what is below the fold is seen too) as dir/name.png; nothing when dir
// is "" (a test's -screenshots flag not given).
func Shot(t testing.TB, ctx context.Context, dir, name string) {
	t.Helper()
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
