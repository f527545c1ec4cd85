package edgeplane

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"strconv"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/store"
)

// TestKindListComplete: every store kind constant of kinds.go is declared
// in kindList, once, and every declaration's identity is whole. A kind
// left out of the list would otherwise store records that produce no
// events, no messages naming them and no traits.
func TestKindListComplete(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "kinds.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var consts []store.Kind
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || len(vs.Values) != 1 || !strings.HasPrefix(vs.Names[0].Name, "Kind") {
			return true
		}
		if lit, ok := vs.Values[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
			v, _ := strconv.Unquote(lit.Value)
			consts = append(consts, store.Kind(v))
		}
		return true
	})
	if len(consts) < 19 {
		t.Fatalf("found %d kind constants in kinds.go; the parse is wrong", len(consts))
	}
	seen := map[store.Kind]int{}
	prefixes := map[string]store.Kind{}
	for _, d := range kindList {
		k := d.info()
		seen[k.StoreKind]++
		if k.Prefix == "" || k.Collection == "" || k.Noun == "" {
			t.Errorf("kind %s: prefix %q, collection %q, noun %q: each must be set", k.StoreKind, k.Prefix, k.Collection, k.Noun)
		}
		if other, dup := prefixes[k.Prefix]; dup {
			t.Errorf("kinds %s and %s share the ID prefix %q", other, k.StoreKind, k.Prefix)
		}
		prefixes[k.Prefix] = k.StoreKind
		if k.Event != "" && !d.presents() {
			t.Errorf("kind %s reports changes but has no presentation (present): its events would show no URI", k.StoreKind)
		}
		if k.Nested && k.Parent == nil {
			t.Errorf("kind %s is nested but has no parent", k.StoreKind)
		}
	}
	for _, c := range consts {
		if seen[c] != 1 {
			t.Errorf("kind %s is declared %d times in kindList, want once", c, seen[c])
		}
	}
	if len(kindList) != len(consts) {
		t.Errorf("kindList has %d kinds, kinds.go %d constants", len(kindList), len(consts))
	}
}

// TestInternalKindListComplete: every unexported store kind constant of
// the package (the Service's own records: nodes, leases, ACME state,
// delivery states...) is in internalKinds, or the followers of the feed
// would log its changes as an unknown kind.
func TestInternalKindListComplete(t *testing.T) {
	pkgs, err := parser.ParseDir(token.NewFileSet(), ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	var found []store.Kind
	for _, f := range pkgs["edgeplane"].Files {
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok || len(vs.Names) != 1 || len(vs.Values) != 1 || !strings.HasPrefix(vs.Names[0].Name, "kind") {
				return true
			}
			sel, ok := vs.Type.(*ast.SelectorExpr)
			lit, isLit := vs.Values[0].(*ast.BasicLit)
			if !ok || sel.Sel.Name != "Kind" || !isLit || lit.Kind != token.STRING {
				return true
			}
			v, _ := strconv.Unquote(lit.Value)
			found = append(found, store.Kind(v))
			return true
		})
	}
	if len(found) < 6 {
		t.Fatalf("found %d internal kind constants; the parse is wrong", len(found))
	}
	for _, k := range found {
		if !isInternal(k) {
			t.Errorf("store kind %q is declared but not in internalKinds", k)
		}
	}
	if len(found) != len(internalKinds) {
		t.Errorf("internalKinds has %d kinds, the package declares %d", len(internalKinds), len(found))
	}
}

// TestKindTraits: the traits of kinds as caches and proxies read them,
// and DataPlaneRoleOf refuses a kind the Service does not store.
func TestKindTraits(t *testing.T) {
	for _, tc := range []struct {
		kind store.Kind
		want traits
	}{
		{KindAPIKey, traits{auth: authForgetRecord}},
		{KindBot, traits{auth: authForgetAll}},
		{KindHTTPSEdgeRoute, traits{dataPlane: DataPlaneRoute}},
		{KindEndpoint, traits{dataPlane: DataPlaneEndpoint}},
		{KindCredential, traits{}},
	} {
		d, ok := declOf(tc.kind)
		if !ok {
			t.Fatalf("kind %s is not declared", tc.kind)
		}
		if got := d.traitsOf(); got != tc.want {
			t.Errorf("traits of %s: %+v; want %+v", tc.kind, got, tc.want)
		}
		if role, ok := DataPlaneRoleOf(tc.kind); !ok || role != tc.want.dataPlane {
			t.Errorf("DataPlaneRoleOf(%s) = %v, %v; want %v, true", tc.kind, role, ok, tc.want.dataPlane)
		}
	}
	if _, ok := DataPlaneRoleOf("agent_session"); ok {
		t.Error("DataPlaneRoleOf answers for a kind the Service does not store")
	}
}
