package agentstate_test

import (
	"context"
	"log/slog"
	"net/netip"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/internal/agentstate"
	"github.com/edgeplane/edgeplane/internal/records"
	"github.com/edgeplane/edgeplane/kinds"
	"github.com/edgeplane/edgeplane/store"
)

// otherRecords authenticates the credentials of another account, so
// that two accounts' agents share one store.
type otherRecords struct {
	fakeRecords
	account string
}

func (r otherRecords) Authenticate(ctx context.Context, token string) (agentstate.Auth, error) {
	if _, err := r.st.Get(ctx, kinds.Credential, r.account, token); err != nil {
		return agentstate.Auth{}, errBadToken
	}
	return agentstate.Auth{AccountID: r.account, CredentialID: token, ACL: nil}, nil
}

// session opens a session of token on a new node and returns its ID.
func (e *env) session(t *testing.T, s *agentstate.State, token string) string {
	t.Helper()
	ctx := context.Background()
	node, err := e.nodes.Register(ctx, agents.NodeParams{})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := s.OpenSession(ctx, token, agents.SessionParams{Node: node.ID, IP: netip.MustParseAddr("192.0.2.1")})
	if err != nil {
		t.Fatal(err)
	}
	return sess.ID
}

// TestInternalEndpoints: an internal endpoint's name ends in .internal
// and needs no reserved domain; it is the account's own (another
// account binds the same name), one endpoint per name in the account;
// a public endpoint never has an internal name.
func TestInternalEndpoints(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	token := e.credential(t, "usr_x")
	sess := e.session(t, e.s, token)
	internal := func(proto, domain string, port int) agents.EndpointParams {
		return agents.EndpointParams{Proto: proto, Domain: domain, Port: port, Binding: agents.BindingInternal}
	}

	ep, err := e.s.BindEndpoint(ctx, account, sess, internal("https", "API.internal", 0))
	if err != nil {
		t.Fatal(err)
	}
	if !ep.IsInternal() || ep.URL != "https://api.internal" || ep.Hostport != "api.internal:443" || ep.Domain != nil {
		t.Fatalf("bound %+v", ep)
	}
	if got, err := e.s.Endpoint(ctx, account, ep.ID); err != nil || !got.IsInternal() {
		t.Fatalf("read back %+v, %v", got, err)
	}
	_, err = e.s.BindEndpoint(ctx, account, sess, internal("https", "api.internal", 0))
	wantCode(t, err, apierr.Conflict, "already bound by another agent of this account")
	if ep, err := e.s.BindEndpoint(ctx, account, sess, internal("http", "api.internal", 8080)); err != nil || ep.URL != "http://api.internal:8080" {
		t.Fatalf("another port: %+v, %v", ep, err)
	}

	for _, tc := range []struct {
		name   string
		params agents.EndpointParams
		code   apierr.Code
		words  string
	}{
		{"not .internal", internal("https", "api.example.com", 0), apierr.InvalidArgument, "must end in .internal"},
		{"no name", internal("https", "", 0), apierr.InvalidArgument, "required for an internal endpoint"},
		{"a wildcard", internal("https", "*.api.internal", 0), apierr.InvalidArgument, "not be a wildcard"},
		{"tls", agents.EndpointParams{Proto: "tls", Domain: "api.internal", Binding: agents.BindingInternal}, apierr.InvalidArgument, "http or https"},
		{"a public internal name", agents.EndpointParams{Proto: "https", Domain: "web.internal"}, apierr.InvalidArgument, "only internal endpoints have"},
		{"a public port", agents.EndpointParams{Proto: "https", Domain: "web.example.com", Port: 8443}, apierr.InvalidArgument, "Port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.s.BindEndpoint(ctx, account, sess, tc.params)
			wantCode(t, err, tc.code, tc.words)
		})
	}

	narrow := e.credential(t, "usr_x", "bind:*.example.com")
	_, err = e.s.BindEndpoint(ctx, account, e.session(t, e.s, narrow), internal("https", "db.internal", 0))
	wantCode(t, err, apierr.PermissionDenied, "bind:db.internal")
	allowed := e.credential(t, "usr_x", "bind:db.internal")
	if _, err := e.s.BindEndpoint(ctx, account, e.session(t, e.s, allowed), internal("https", "db.internal", 0)); err != nil {
		t.Fatalf("bind:db.internal: %v", err)
	}

	// Another account's api.internal is its own.
	other, otherToken, s2 := e.otherAccount(t)
	theirs, err := s2.BindEndpoint(ctx, other, e.session(t, s2, otherToken), internal("https", "api.internal", 0))
	if err != nil {
		t.Fatalf("another account's api.internal: %v", err)
	}
	if theirs.AccountID != other || theirs.ID == ep.ID {
		t.Fatalf("theirs %+v", theirs)
	}
}

// TestGeneratedDomain: an http or https endpoint that names no domain
// gets <label>.<base>, the same name when it binds again under its ID;
// without a base, the bind is refused saying that a domain is needed.
func TestGeneratedDomain(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	token := e.credential(t, "usr_x")
	sess := e.session(t, e.s, token)
	const base = "agents.example.test"

	_, err := e.s.BindEndpoint(ctx, account, sess, agents.EndpointParams{Proto: "https"})
	wantCode(t, err, apierr.InvalidArgument, "Domain: is required for an https endpoint")
	wantCode(t, err, apierr.InvalidArgument, "-agent-domain-base")

	ep, err := e.s.BindEndpoint(ctx, account, sess, agents.EndpointParams{Proto: "https", DomainBase: base})
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^https://[a-z2-7]{16}\.agents\.example\.test$`).MatchString(ep.URL) || ep.IsInternal() || ep.Domain != nil {
		t.Fatalf("bound %+v", ep)
	}
	again, err := e.s.BindEndpoint(ctx, account, e.session(t, e.s, token), agents.EndpointParams{ID: ep.ID, TakeOver: true, Proto: "https", DomainBase: base})
	if err != nil || again.URL != ep.URL || again.ID != ep.ID {
		t.Fatalf("rebound %+v, %v; first %s", again, err, ep.URL)
	}
	if err := e.s.UnbindEndpoint(ctx, account, ep.ID); err != nil {
		t.Fatal(err)
	}
	if anew, err := e.s.BindEndpoint(ctx, account, sess, agents.EndpointParams{ID: ep.ID, Proto: "https", DomainBase: base}); err != nil || anew.URL != ep.URL {
		t.Fatalf("bound again once gone: %+v, %v", anew, err)
	}
	if other, err := e.s.BindEndpoint(ctx, account, sess, agents.EndpointParams{Proto: "http", DomainBase: base}); err != nil || other.URL == "http://"+ep.Host {
		t.Fatalf("another endpoint: %+v, %v", other, err)
	}

	// A name under the base is the server's to give: another's is
	// refused, the endpoint's own is the same as none.
	_, err = e.s.BindEndpoint(ctx, account, sess, agents.EndpointParams{Proto: "https", Domain: "mine." + base, DomainBase: base})
	wantCode(t, err, apierr.PermissionDenied, "given by this tunnel server")
	_, err = e.s.BindEndpoint(ctx, account, sess, agents.EndpointParams{Proto: "https", Domain: ep.Host, DomainBase: base})
	wantCode(t, err, apierr.PermissionDenied, "given by this tunnel server")
	if again, err := e.s.BindEndpoint(ctx, account, sess, agents.EndpointParams{ID: ep.ID, TakeOver: true, Proto: "https", Domain: strings.ToUpper(ep.Host), DomainBase: base}); err != nil || again.URL != ep.URL {
		t.Fatalf("its own name asked for again: %+v, %v", again, err)
	}

	narrow := e.credential(t, "usr_x", "bind:*.example.com")
	_, err = e.s.BindEndpoint(ctx, account, e.session(t, e.s, narrow), agents.EndpointParams{Proto: "https", DomainBase: base})
	wantCode(t, err, apierr.PermissionDenied, "bind:*."+base)
	wide := e.credential(t, "usr_x", "bind:*."+base)
	if _, err := e.s.BindEndpoint(ctx, account, e.session(t, e.s, wide), agents.EndpointParams{Proto: "http", DomainBase: base}); err != nil {
		t.Fatalf("bind:*.%s: %v", base, err)
	}
}

// otherAccount returns another account, the token of a credential of
// it, and a State whose agents authenticate as that account's, on the
// store of e.
func (e *env) otherAccount(t *testing.T) (string, string, *agentstate.State) {
	t.Helper()
	other := e.gen.New("acct_")
	otherToken := e.gen.New(credentials.IDPrefix)
	rec := store.Record{Kind: kinds.Credential, AccountID: other, ID: otherToken}
	if err := credentialForm.Encode(&records.DB{}, &credentials.Credential{OwnerID: "usr_y"}, &rec); err != nil {
		t.Fatal(err)
	}
	if err := e.st.Create(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	db := &records.DB{Store: e.st, Log: slog.New(slog.DiscardHandler), Now: func() time.Time { return e.now },
		Kinds: records.Kinds{credentialKind, sessionKind, tunnelKind, endpointKind}}
	s2 := agentstate.New(agentstate.Config{DB: db, Nodes: e.nodes, IDs: e.gen, Lease: lease, Limits: agents.Limits{}.WithDefaults(),
		Forms: agentstate.Forms{Sessions: agentstate.SessionForm(sessionKind), Tunnels: agentstate.TunnelForm(tunnelKind),
			Endpoints: agentstate.EndpointForm(endpointKind), Credentials: credentialForm},
		Records: otherRecords{fakeRecords: fakeRecords{st: e.st, db: db}, account: other}, BadToken: errBadToken})
	return other, otherToken, s2
}

// TestInternalPool: internal endpoints bound with pooling enabled on one
// name of one account form a pool, shown on each member; a bind without
// pooling on it is refused with the original's words, and the reverse;
// another account's pool on the same name is its own.
func TestInternalPool(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	token := e.credential(t, "usr_x")
	bind := func(s *agentstate.State, acct, tok string, pooled bool) (*agents.Endpoint, error) {
		return s.BindEndpoint(ctx, acct, e.session(t, s, tok), agents.EndpointParams{Proto: "https", Domain: "api.internal",
			Binding: agents.BindingInternal, PoolingEnabled: pooled})
	}
	a, err := bind(e.s, account, token, true)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bind(e.s, account, token, true)
	if err != nil {
		t.Fatalf("the second member: %v", err)
	}
	got, err := e.s.Endpoint(ctx, account, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !got.IsInternal() || got.Pool == nil || got.Pool.URL != "https://api.internal" || len(got.Pool.Endpoints) != 2 ||
		got.Pool.Endpoints[0].ID != a.ID || got.Pool.Endpoints[1].ID != b.ID {
		t.Fatalf("the pool of %s: %+v", b.ID, got.Pool)
	}
	_, err = bind(e.s, account, token, false)
	wantCode(t, err, apierr.Conflict, "the endpoint 'https://api.internal' is already online as a pool of endpoints with pooling enabled")

	other, otherToken, s2 := e.otherAccount(t)
	for range 2 {
		if _, err := bind(s2, other, otherToken, true); err != nil {
			t.Fatalf("another account's pool on api.internal: %v", err)
		}
	}

	for _, id := range []string{a.ID, b.ID} {
		if err := e.s.UnbindEndpoint(ctx, account, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := bind(e.s, account, token, false); err != nil {
		t.Fatalf("the name once the pool is gone: %v", err)
	}
	_, err = bind(e.s, account, token, true)
	wantCode(t, err, apierr.Conflict, "the endpoint 'https://api.internal' is already online without pooling")
}
