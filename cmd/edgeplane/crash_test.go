package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binDir holds the binary buildBinary builds; TestMain removes it.
var binDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// buildBinary builds the edgeplane command once per test run.
var buildBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "edgeplane-bin")
	if err != nil {
		return "", err
	}
	binDir = dir
	bin := filepath.Join(dir, "edgeplane")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// startProcess runs edgeplane serve as a subprocess and returns its
// address and the process.
func startProcess(t *testing.T, spec string, env ...string) (string, *exec.Cmd) {
	t.Helper()
	bin, err := buildBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "-addr", "127.0.0.1:0", "-store", spec, "-rate-limit", "0")
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := regexp.MustCompile(`listening on http://(\S+)`).FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	select {
	case a := <-addr:
		return a, cmd
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not start")
		return "", nil
	}
}

// TestCrashSafetySQLite: a client streams creates and updates; the server
// is killed with SIGKILL mid-stream and restarted on the same file; every
// write that got a 2xx is there with its last acknowledged value (or the
// value of the one write the kill cut, which may have committed without
// its answer reaching the client).
func TestCrashSafetySQLite(t *testing.T) {
	crashSafety(t, "sqlite:"+filepath.Join(t.TempDir(), "crash.db"))
}

// TestCrashSafetyPostgres is the same on PostgreSQL.
func TestCrashSafetyPostgres(t *testing.T) {
	crashSafety(t, freshPostgres(t), sealKeyEnv)
}

func crashSafety(t *testing.T, spec string, env ...string) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	key := "EDGEPLANE_API_KEY=epk_" + strings.Repeat("c", 40)
	env = append(env, key)
	addr, cmd := startProcess(t, spec, env...)
	do := apiDo

	acked := map[string]string{}    // credential ID -> last acknowledged description
	inFlight := map[string]string{} // the write the kill cut: it may have committed unacknowledged
	kill := time.AfterFunc(300*time.Millisecond, func() { _ = cmd.Process.Signal(syscall.SIGKILL) })
	defer kill.Stop()
	var ids []string
	for i := 0; ; i++ {
		desc := fmt.Sprintf("v%d", i)
		var code int
		var v map[string]any
		if i%2 == 0 || len(ids) == 0 {
			code, v = do(addr, "POST", "/credentials", `{"description":"`+desc+`"}`)
			if code == 201 {
				id := v["id"].(string)
				ids = append(ids, id)
				acked[id] = desc
			}
		} else {
			id := ids[i%len(ids)]
			code, _ = do(addr, "PATCH", "/credentials/"+id, `{"description":"`+desc+`"}`)
			if code == 200 {
				acked[id] = desc
			}
			if code == 0 {
				inFlight[id] = desc
			}
		}
		if code == 0 { // the server is gone
			break
		}
		if i > 100_000 {
			t.Fatal("the server was never killed")
		}
	}
	_ = cmd.Wait()
	if len(acked) == 0 {
		t.Fatal("no write was acknowledged before the kill")
	}

	addr, _ = startProcess(t, spec, env...)
	for id, want := range acked {
		code, v := do(addr, "GET", "/credentials/"+id, "")
		if got := v["description"]; code != 200 || (got != want && got != inFlight[id]) {
			t.Errorf("after the crash, %s: %d %v; want its last acknowledged description %q (or the unacknowledged %q)", id, code, got, want, inFlight[id])
		}
	}
	t.Logf("%d credentials acknowledged before SIGKILL, all present after the restart", len(acked))
}
