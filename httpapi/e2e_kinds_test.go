package httpapi_test

import (
	"context"
	"testing"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/httpapi"
	"github.com/edgeplane/edgeplane/store"
)

// unfixturedKinds are the kinds newFixture does not create through the
// API, on purpose: accounts and users are the host's, tunnels are
// registered by tunnel servers (the API only reads them), and bot users
// and API keys are created by the identity tests, which need their own
// subjects.
var unfixturedKinds = map[store.Kind]bool{
	edgeplane.KindAccount: true, edgeplane.KindUser: true, edgeplane.KindTunnel: true,
	edgeplane.KindBot: true, edgeplane.KindAPIKey: true,
}

// TestFixtureHasEveryKind: the e2e fixture holds a record of every kind
// the Service declares (but unfixturedKinds), so that the wire, filter,
// isolation and bad-input tests that walk it reach every kind; a kind
// added without a fixture fails here.
func TestFixtureHasEveryKind(t *testing.T) {
	s := newServer(t, httpapi.Options{})
	f := newFixture(t, s, s.keyA, "kinds")
	p := principalOf(t, s, f)
	for _, k := range edgeplane.Kinds() {
		if unfixturedKinds[k.Kind] {
			continue
		}
		recs, err := s.store.List(context.Background(), store.Query{Kind: k.Kind, AccountID: p.AccountID, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) == 0 {
			t.Errorf("the fixture has no %s: create one in newFixture or exempt the kind in unfixturedKinds", k.Kind)
		}
	}
}
