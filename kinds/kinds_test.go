package kinds_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"testing"

	"github.com/edgeplane/edgeplane/kinds"
	"github.com/edgeplane/edgeplane/store"
)

// TestEveryKindKnown: every kind constant of kinds.go is either shown or
// internal, not both, and known to DataPlaneRoleOf; a kind the Service
// does not store is not.
func TestEveryKindKnown(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "kinds.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var consts []store.Kind
	for _, d := range f.Decls {
		if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.CONST {
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if len(vs.Values) == 0 {
					continue
				}
				if lit, ok := vs.Values[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, _ := strconv.Unquote(lit.Value)
					consts = append(consts, store.Kind(v))
				}
			}
		}
	}
	if len(consts) != len(kinds.Shown)+6 {
		t.Fatalf("kinds.go declares %d kinds; Shown has %d and there are 6 internal ones: a kind is in neither list", len(consts), len(kinds.Shown))
	}
	for _, k := range consts {
		shown, internal := slices.Contains(kinds.Shown, k), kinds.Internal(k)
		if shown == internal {
			t.Errorf("kind %s: shown %v, internal %v; want exactly one", k, shown, internal)
		}
		if _, ok := kinds.DataPlaneRoleOf(k); !ok {
			t.Errorf("DataPlaneRoleOf(%s) does not know it", k)
		}
	}
	if _, ok := kinds.DataPlaneRoleOf("agent_session"); ok {
		t.Error("DataPlaneRoleOf answers for a kind the Service does not store")
	}
}

// TestDataPlaneRoles: the parts the proxy's configs take, one row each.
func TestDataPlaneRoles(t *testing.T) {
	for k, want := range map[store.Kind]kinds.DataPlaneRole{
		kinds.HTTPSEdge: kinds.DataPlaneEdge, kinds.TLSEdge: kinds.DataPlaneEdge, kinds.TCPEdge: kinds.DataPlaneEdge,
		kinds.HTTPSEdgeRoute: kinds.DataPlaneRoute, kinds.Endpoint: kinds.DataPlaneEndpoint, kinds.Tunnel: kinds.DataPlaneTunnel,
		kinds.Credential: kinds.DataPlaneNone, kinds.Node: kinds.DataPlaneNone,
	} {
		if got, ok := kinds.DataPlaneRoleOf(k); !ok || got != want {
			t.Errorf("DataPlaneRoleOf(%s) = %v, %v; want %v, true", k, got, ok, want)
		}
	}
}
