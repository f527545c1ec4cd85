package proxy_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestNoRootImport keeps the data plane off the control plane: neither
// package proxy nor any package under proxy/ imports the root package
// edgeplane, directly or through another package. The proxy reads the
// Service through the [proxy.Host] it declares, and cmd/edgeplane wires
// the root's implementation in. Test files are not counted: tests may
// run the proxy against a real Service.
func TestNoRootImport(t *testing.T) {
	const root = "github.com/edgeplane/edgeplane"
	// Every package in the import graph of proxy/... (not of its tests),
	// with its direct imports: "path imp,imp,...".
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}} {{join .Imports ","}}`, "./...").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	imports := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		path, imps, _ := strings.Cut(strings.TrimSpace(line), " ")
		if imps != "" {
			imports[path] = strings.Split(imps, ",")
		} else {
			imports[path] = nil
		}
	}
	if _, ok := imports[root+"/proxy"]; !ok {
		t.Fatalf("go list did not list %s/proxy; got %d packages", root, len(imports))
	}
	var checked int
	for path := range imports {
		if path != root+"/proxy" && !strings.HasPrefix(path, root+"/proxy/") {
			continue
		}
		checked++
		if chain := importChain(imports, path, root); chain != nil {
			t.Errorf("package %s imports the root package %s: %s; declare what it needs in an interface of its own (as proxy.Host) and move shared types to a leaf",
				path, root, strings.Join(chain, " -> "))
		}
	}
	if checked < 2 {
		t.Errorf("checked %d packages under proxy/; want proxy and its subpackages", checked)
	}
}

// importChain returns the shortest chain of imports from pkg to target,
// both included, or nil when pkg does not reach target.
func importChain(imports map[string][]string, pkg, target string) []string {
	prev := map[string]string{pkg: ""}
	queue := []string{pkg}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, imp := range imports[p] {
			if _, seen := prev[imp]; seen {
				continue
			}
			prev[imp] = p
			if imp == target {
				var chain []string
				for q := imp; q != ""; q = prev[q] {
					chain = append(chain, q)
				}
				slices.Reverse(chain)
				return chain
			}
			queue = append(queue, imp)
		}
	}
	return nil
}
