// Command apiserver runs the management API over JSON/HTTP on the
// in-memory store: the README's run command.
//
//	go run ./examples/apiserver [-addr 127.0.0.1:8080] [-base-url http://127.0.0.1:8080]
//
// It creates one account with an admin user. The admin's API key is taken
// from the environment variable EDGEPLANE_API_KEY when set (it must start
// with epk_ followed by at least 32 characters), else generated and
// printed once. The sealing key of certificate private keys
// (edgeplane.Options.SealingKey) comes from EDGEPLANE_SEAL_KEY (32
// bytes, base64) or is generated and printed once, with a warning that
// keys sealed under it are unreadable once it is lost. It prints
// "listening on http://<addr>" when ready, logs
// each request with log/slog, and shuts down gracefully on SIGINT or
// SIGTERM. State lives in memory and is gone when it stops. The server
// has the timeouts and request bounds of package httpserver's defaults.
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/httpapi"
	"github.com/edgeplane/edgeplane/httpserver"
	"github.com/edgeplane/edgeplane/memstore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "apiserver:", err)
		os.Exit(1)
	}
}

// run starts the server and blocks until ctx is done. ready, when not nil,
// receives the listening address.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, ready chan<- string) error {
	fs := flag.NewFlagSet("apiserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on")
	baseURL := fs.String("base-url", "", "base URL of uri fields (default http://<addr>)")
	if err := fs.Parse(args); err != nil {
		return err
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	if *baseURL == "" {
		*baseURL = "http://" + ln.Addr().String()
	}

	logger := slog.New(slog.NewTextHandler(stderr, nil))
	sealingKey, err := sealingKey(getenv("EDGEPLANE_SEAL_KEY"), stdout)
	if err != nil {
		return err
	}
	svc, err := edgeplane.New(memstore.New(), edgeplane.Options{BaseURL: *baseURL, Logger: logger, SealingKey: sealingKey})
	if err != nil {
		return err
	}
	b, err := svc.Host().Bootstrap(ctx, getenv("EDGEPLANE_API_KEY"))
	if err != nil {
		return fmt.Errorf("EDGEPLANE_API_KEY: %w", err)
	}
	if getenv("EDGEPLANE_API_KEY") == "" {
		fmt.Fprintf(stdout, "admin API key (shown once): %s\n", *b.APIKey.Token)
	} else {
		fmt.Fprintln(stdout, "admin API key: from EDGEPLANE_API_KEY")
	}

	h, err := httpapi.New(svc, httpapi.Options{Logger: logger})
	if err != nil {
		return err
	}
	srv := httpserver.New(h, httpserver.Options{ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)})
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())
	if ready != nil {
		ready <- ln.Addr().String()
	}

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	fmt.Fprintln(stdout, "shut down")
	return nil
}

// sealingKey decodes EDGEPLANE_SEAL_KEY (standard base64 of
// edgeplane.SealingKeySize bytes), or generates a key and prints it once
// when env is empty.
func sealingKey(env string, stdout io.Writer) ([]byte, error) {
	if env == "" {
		key := make([]byte, edgeplane.SealingKeySize)
		rand.Read(key)
		fmt.Fprintf(stdout, "sealing key (shown once; set EDGEPLANE_SEAL_KEY to it, or certificate private keys are unreadable after a restart): %s\n",
			base64.StdEncoding.EncodeToString(key))
		return key, nil
	}
	key, err := base64.StdEncoding.DecodeString(env)
	if err != nil || len(key) != edgeplane.SealingKeySize {
		return nil, fmt.Errorf("EDGEPLANE_SEAL_KEY: want the standard base64 of %d bytes", edgeplane.SealingKeySize)
	}
	fmt.Fprintln(stdout, "sealing key: from EDGEPLANE_SEAL_KEY")
	return key, nil
}
