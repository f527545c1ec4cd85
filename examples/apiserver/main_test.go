package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/internal/syncbuf"
	"github.com/edgeplane/edgeplane/policy/limits"
)

func TestRunServesAndShutsDown(t *testing.T) {
	key := "epk_" + strings.Repeat("t", 40)
	env := map[string]string{"EDGEPLANE_API_KEY": key}
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncbuf.Buffer
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0"}, func(k string) string { return env[k] }, &stdout, &stderr, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("run returned early: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("server not ready")
	}
	if !strings.Contains(stdout.String(), "listening on http://"+addr) {
		t.Errorf("stdout lacks the listening line: %q", stdout.String())
	}

	req, _ := http.NewRequest("POST", "http://"+addr+"/credentials", strings.NewReader(`{"description":"from test"}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Service-Version", "2")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 || !strings.Contains(string(body), `"uri":"http://`+addr+`/credentials/cr_`) {
		t.Errorf("create over HTTP: %d %s", resp.StatusCode, body)
	}

	// The server's bounds agree with the policy cost model's (package
	// httpserver): a long request target gets 414 and large headers 431,
	// before authentication.
	for _, tc := range []struct {
		name   string
		path   string
		header string
		want   int
	}{
		{"long URL", "/credentials/" + strings.Repeat("i", limits.MaxURLBytes), "", http.StatusRequestURITooLong},
		{"large headers", "/credentials", strings.Repeat("h", limits.MaxRequestHeaderBytes+4096), http.StatusRequestHeaderFieldsTooLarge},
	} {
		req, _ := http.NewRequest("GET", "http://"+addr+tc.path, nil)
		req.Header.Set("X-Big", tc.header)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no graceful shutdown")
	}
	if !strings.Contains(stdout.String(), "shut down") {
		t.Errorf("stdout: %q", stdout.String())
	}
	if !strings.Contains(stderr.String(), "path=/credentials status=201") {
		t.Errorf("request not logged: %s", stderr.String())
	}
}

func TestGeneratedKeyAndBadEnvKey(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncbuf.Buffer
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0"}, func(string) string { return "" }, &stdout, &stderr, ready)
	}()
	<-ready
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "admin API key (shown once): epk_") {
		t.Errorf("no generated key printed: %q", stdout.String())
	}
	if !strings.Contains(stdout.String(), "sealing key (shown once; set EDGEPLANE_SEAL_KEY") {
		t.Errorf("no generated sealing key printed: %q", stdout.String())
	}
	only := func(name, value string) func(string) string {
		return func(k string) string {
			if k == name {
				return value
			}
			return ""
		}
	}
	err := run(context.Background(), []string{"-addr", "127.0.0.1:0"}, only("EDGEPLANE_API_KEY", "weak"), io.Discard, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "EDGEPLANE_API_KEY") {
		t.Errorf("weak EDGEPLANE_API_KEY: %v", err)
	}
	for _, bad := range []string{"not base64!", base64.StdEncoding.EncodeToString(make([]byte, 16))} {
		err = run(context.Background(), []string{"-addr", "127.0.0.1:0"}, only("EDGEPLANE_SEAL_KEY", bad), io.Discard, io.Discard, nil)
		if err == nil || !strings.Contains(err.Error(), "EDGEPLANE_SEAL_KEY: want the standard base64 of 32 bytes") {
			t.Errorf("EDGEPLANE_SEAL_KEY=%q: %v", bad, err)
		}
	}
	key, err := sealingKey(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32)), io.Discard)
	if err != nil || !bytes.Equal(key, bytes.Repeat([]byte{1}, 32)) {
		t.Errorf("a good EDGEPLANE_SEAL_KEY: %x, %v", key, err)
	}
}
