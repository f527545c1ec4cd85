package limits_test

import (
	"go/build"
	"slices"
	"testing"
)

// TestLeaf checks the point of the package: it imports nothing, and the
// packages that read only bounds (httpserver, filter) import it rather
// than the policy engine.
func TestLeaf(t *testing.T) {
	const policyPkg = "github.com/edgeplane/edgeplane/policy"
	tests := []struct {
		name, dir string
		forbid    func(imp string) bool
	}{
		{"limits imports nothing", ".", func(string) bool { return true }},
		{"httpserver", "../../httpserver", func(imp string) bool { return imp == policyPkg }},
		{"filter", "../../filter", func(imp string) bool { return imp == policyPkg }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := build.ImportDir(tt.dir, 0)
			if err != nil {
				t.Fatal(err)
			}
			if i := slices.IndexFunc(p.Imports, tt.forbid); i >= 0 {
				t.Errorf("%s imports %s", tt.dir, p.Imports[i])
			}
		})
	}
}
