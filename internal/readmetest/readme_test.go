//go:build unix

package readmetest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// maxReadmeLines is the most lines README.md may have: the rest belongs in
// docs/.
const maxReadmeLines = 300

// tryItHeading is the README's heading whose first sh block is the Try-it
// block.
const tryItHeading = "## Try it"

// block is one fenced code block of a Markdown file.
type block struct {
	file string // relative to the module root
	line int    // of the opening fence, from 1
	lang string // the fence's info string: sh, bash, json, ...
	// section is the heading the block is under ("## Try it").
	section string
	// run says the block is self-contained: a "<!-- run -->" comment is
	// on the line before its fence.
	run  bool
	text string
}

// moduleRoot returns the directory of go.mod above the working directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// blocks returns the fenced code blocks of the Markdown file at
// root/file, in order.
func blocks(t *testing.T, root, file string) []block {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	var (
		out           []block
		cur           *block
		section, prev string
		fence         string
		lines         strings.Builder
		sc            = bufio.NewScanner(bytes.NewReader(data))
		n             int
	)
	for sc.Scan() {
		n++
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			fence = trimmed[:strings.LastIndex(trimmed, "`")+1]
			cur = &block{file: file, line: n, lang: strings.TrimSpace(trimmed[len(fence):]), section: section,
				run: strings.TrimSpace(prev) == "<!-- run -->"}
			lines.Reset()
		case cur != nil && trimmed == fence:
			cur.text = lines.String()
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			// A fence indented in a list item: its lines carry the indent.
			lines.WriteString(line)
			lines.WriteByte('\n')
		case strings.HasPrefix(line, "#"):
			section = line
		}
		prev = line
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Fatalf("%s:%d: a code block that is never closed", file, cur.line)
	}
	return out
}

func TestReadmeLength(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(moduleRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(data, []byte("\n")); n > maxReadmeLines {
		t.Errorf("README.md has %d lines; at most %d: move the details to docs/ and link them", n, maxReadmeLines)
	}
}

// tryIt returns the README's Try-it block: the first sh block under
// tryItHeading.
func tryIt(t *testing.T, root string) block {
	t.Helper()
	for _, b := range blocks(t, root, "README.md") {
		if b.section == tryItHeading && b.lang == "sh" {
			return b
		}
	}
	t.Fatalf("README.md: no sh block under %q", tryItHeading)
	return block{}
}

// need skips the test when a program the shell examples run is missing.
func need(t *testing.T, programs ...string) {
	t.Helper()
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed (%v): the README's examples need it", p, err)
		}
	}
}

// freeAddrs returns n loopback addresses with ports free a moment ago.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var addrs []string
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		addrs = append(addrs, ln.Addr().String())
	}
	for _, ln := range lns {
		ln.Close()
	}
	return addrs
}

// environ returns the test's environment without EDGEPLANE_ variables,
// which would change what the servers of the examples do, and with extra.
func environ(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "EDGEPLANE_") && !strings.HasPrefix(kv, "TRY_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// runBash runs script with bash in dir, in a process group of its own
// that is killed when ctx ends, with stdin empty; it returns the combined
// output.
func runBash(ctx context.Context, dir, script string, env []string) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = dir
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	return out.String(), err
}

// TestTryIt runs the README's Try-it block as a newcomer pastes it, from
// the module root, with its TRY_ variables pointing at a temporary
// directory and free ports: it builds the binaries there, and it fails
// when any command of the block fails. Then the servers it started must
// be gone.
func TestTryIt(t *testing.T) {
	need(t, "bash", "curl", "go")
	root := moduleRoot(t)
	b := tryIt(t, root)
	addrs := freeAddrs(t, 4)
	_, appPort, _ := net.SplitHostPort(addrs[3])
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a build with empty caches takes minutes
	defer cancel()
	out, err := runBash(ctx, root, b.text, environ(
		"TRY_DIR="+dir,
		"TRY_API_ADDR="+addrs[0],
		"TRY_PROXY_ADDR="+addrs[1],
		"TRY_TUNNEL_ADDR="+addrs[2],
		"TRY_APP_PORT="+appPort,
	))
	if err != nil {
		t.Fatalf("README.md:%d: the Try-it block failed: %v\n%s", b.line, err, out)
	}
	for _, want := range []string{
		"edgeplane agent -server " + addrs[2] + " -ca " + filepath.Join(dir, "edgeplane.db.tls", "ca.pem"),
		"\napp http://app.example.com\n",
		"hello from the local app: GET /hello\n",
		"http://app.example.com answers through the tunnel.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the Try-it block's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "FAILED") {
		t.Errorf("the Try-it block reported a failure:\n%s", out)
	}
	// The block stops what it started: nothing listens any more.
	for _, a := range addrs {
		if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after the block ended", a)
		}
	}
	t.Logf("README.md:%d: the Try-it block passed:\n%s", b.line, out)
}

// shellBlocks returns the sh and bash blocks of README.md and of every
// Markdown file under docs/.
func shellBlocks(t *testing.T, root string) []block {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, _ := filepath.Rel(root, path)
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []block
	for _, f := range files {
		for _, b := range blocks(t, root, f) {
			if b.lang == "sh" || b.lang == "bash" {
				out = append(out, b)
			}
		}
	}
	return out
}

// TestShellExamplesParse checks that every shell example of README.md and
// docs/ is valid bash (bash -n): a quote or a backslash lost in an edit
// shows here.
func TestShellExamplesParse(t *testing.T) {
	need(t, "bash")
	root := moduleRoot(t)
	bs := shellBlocks(t, root)
	if len(bs) < 2 {
		t.Fatalf("%d shell blocks in README.md and docs/; want the Try-it block and the docs' examples", len(bs))
	}
	for _, b := range bs {
		name := fmt.Sprintf("%s:%d", b.file, b.line)
		out, err := exec.Command("bash", "-n", "-c", b.text).CombinedOutput()
		if err != nil {
			t.Errorf("%s: bash -n: %v\n%s", name, err, out)
		}
	}
}

// TestSelfContainedExamples runs the shell examples of docs/ marked
// self-contained (a "<!-- run -->" line before the fence) from the module
// root, each in a new temporary directory given as TRY_DIR.
func TestSelfContainedExamples(t *testing.T) {
	need(t, "bash", "curl", "go")
	root := moduleRoot(t)
	ran := 0
	defer func() {
		if ran == 0 {
			t.Error("no shell block of docs/ is marked <!-- run -->; want at least the library's quick start")
		}
	}()
	for _, b := range shellBlocks(t, root) {
		if !b.run || b.file == "README.md" {
			continue
		}
		ran++
		t.Run(fmt.Sprintf("%s:%d", b.file, b.line), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			out, err := runBash(ctx, root, b.text, environ("TRY_DIR="+t.TempDir()))
			if err != nil {
				t.Fatalf("%s:%d failed: %v\n%s", b.file, b.line, err, out)
			}
		})
	}
}
