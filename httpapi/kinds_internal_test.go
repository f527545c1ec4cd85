package httpapi

import (
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/store"
)

// routelessKinds are the kinds the API has no routes of, on purpose:
// accounts and users are the host's (package edgeplane's Host).
var routelessKinds = map[store.Kind]bool{edgeplane.KindAccount: true, edgeplane.KindUser: true}

// TestEveryKindHasRoutes: every kind the Service declares has a list or
// read route at its collection (below its parent's route for a nested
// kind), unless routelessKinds exempts it; a kind added to the Service
// without routes fails here.
func TestEveryKindHasRoutes(t *testing.T) {
	h, err := New(mustService(edgeplane.New(memstore.New(), edgeplane.Options{})), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, rt := range h.table() {
		paths = append(paths, rt.pattern)
	}
	kinds := map[store.Kind]edgeplane.KindInfo{}
	for _, k := range edgeplane.Kinds() {
		kinds[k.Kind] = k
	}
	for _, k := range edgeplane.Kinds() {
		if routelessKinds[k.Kind] {
			continue
		}
		want := "/" + k.Collection
		found := false
		for _, p := range paths {
			switch {
			case !k.Nested && (p == want || strings.HasPrefix(p, want+"/{")):
				found = true
			case k.Nested && strings.HasPrefix(p, "/"+kinds[k.Parent].Collection+"/{") && (strings.HasSuffix(p, want) || strings.Contains(p, want+"/{")):
				found = true
			}
		}
		if !found {
			t.Errorf("kind %s has no route at %s (nested: %v); add its routes or exempt it in routelessKinds", k.Kind, want, k.Nested)
		}
	}
}
