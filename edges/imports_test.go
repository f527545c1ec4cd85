package edges_test

import (
	"go/build"
	"slices"
	"strings"
	"testing"
)

// TestLeafImports keeps package edges a leaf: of edgeplane's packages it
// imports only other leaves (errors, resource models, ID and validation
// helpers), never the policy engine, the runtime configs of package
// edgeconfig, the store or the root.
func TestLeafImports(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	const module = "github.com/edgeplane/edgeplane"
	allowed := []string{
		module + "/apierr",
		module + "/backends",
		module + "/domains",
		module + "/internal/ids",
		module + "/internal/validate",
		module + "/ipaccess",
		module + "/resource",
	}
	for _, imp := range pkg.Imports {
		if (imp == module || strings.HasPrefix(imp, module+"/")) && !slices.Contains(allowed, imp) {
			t.Errorf("package edges imports %s; a leaf imports only %v", imp, allowed)
		}
	}
}
