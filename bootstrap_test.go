package edgeplane_test

import (
	"context"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/internal/seal"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/store"
)

// TestBootstrap: an empty store gets the default account, an admin and a
// working key; a second bootstrap on the same store (a restart) creates
// nothing and the key keeps working.
func TestBootstrap(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	svc, err := edgeplane.New(st, edgeplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	secret := "epk_" + strings.Repeat("b", 40)
	b, err := svc.Host().Bootstrap(ctx, secret)
	if err != nil || !b.Created || b.APIKey == nil || *b.APIKey.Token != secret {
		t.Fatalf("first bootstrap = %+v, %v", b, err)
	}
	p, err := svc.Authenticate(ctx, secret)
	if err != nil || !p.Admin || p.AccountID != b.AccountID {
		t.Fatalf("the bootstrap key: %+v, %v", p, err)
	}
	restarted, err := edgeplane.New(st, edgeplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	again, err := restarted.Host().Bootstrap(ctx, "")
	if err != nil || again.Created || again.APIKey != nil {
		t.Fatalf("bootstrap of a used store = %+v, %v", again, err)
	}
	if _, err := restarted.Authenticate(ctx, secret); err != nil {
		t.Errorf("the key after a restart: %v", err)
	}
	accounts, next, err := restarted.Host().ListAccounts(ctx, edgeplane.ListOptions{})
	if err != nil || len(accounts) != 1 || accounts[0].Name != "default" || next != "" {
		t.Errorf("accounts = %+v, %q, %v", accounts, next, err)
	}

	generated, err := mustService(edgeplane.New(memstore.New(), edgeplane.Options{})).Host().Bootstrap(ctx, "")
	if err != nil || !strings.HasPrefix(*generated.APIKey.Token, identity.APIKeySecretPrefix) {
		t.Errorf("generated key: %+v, %v", generated, err)
	}
	_, err = mustService(edgeplane.New(memstore.New(), edgeplane.Options{})).Host().Bootstrap(ctx, "weak")
	wantViolation(t, err, "secret", "must start with")
}

func TestListAccountsPaging(t *testing.T) {
	ctx := context.Background()
	svc, err := edgeplane.New(memstore.New(), edgeplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := svc.Host().CreateAccount(ctx, identity.AccountParams{Name: "a"}); err != nil {
			t.Fatal(err)
		}
	}
	seen := 0
	opts := edgeplane.ListOptions{Limit: 2}
	for {
		page, next, err := svc.Host().ListAccounts(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		seen += len(page)
		if next == "" {
			break
		}
		opts.BeforeID = next
	}
	if seen != 5 {
		t.Errorf("paged %d accounts, want 5", seen)
	}
	_, _, err = svc.Host().ListAccounts(ctx, edgeplane.ListOptions{Limit: 1000})
	wantCode(t, err, apierr.InvalidArgument)
}

func TestCheckSealingKey(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	key := make([]byte, edgeplane.SealingKeySize)
	if err := mustService(edgeplane.New(st, edgeplane.Options{SealingKey: key})).Host().CheckSealingKey(ctx); err != nil {
		t.Fatalf("first check: %v", err)
	}
	if err := mustService(edgeplane.New(st, edgeplane.Options{SealingKey: key})).Host().CheckSealingKey(ctx); err != nil {
		t.Fatalf("same key: %v", err)
	}
	other := make([]byte, edgeplane.SealingKeySize)
	other[0] = 1
	err := mustService(edgeplane.New(st, edgeplane.Options{SealingKey: other})).Host().CheckSealingKey(ctx)
	if apierr.CodeOf(err) != apierr.FailedPrecondition || !strings.Contains(err.Error(), "another sealing key") {
		t.Errorf("another key: %v", err)
	}
}

// TestCheckSealingKeyFormat: a store whose sealing check records another
// document format than this version's is refused, saying which way.
func TestCheckSealingKeyFormat(t *testing.T) {
	ctx := context.Background()
	key := make([]byte, edgeplane.SealingKeySize)
	sealer, err := seal.New(key)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ plain, want string }{
		{"edgeplane sealing check", "earlier development version"}, // format 1 sealed the bare text
		{"edgeplane sealing check; document format 1", "earlier development version"},
		{"edgeplane sealing check; document format 3", "newer version"},
		{"edgeplane sealing check; document format x", "malformed"},
		{"edgeplane sealing check; document format 2", ""},
	} {
		st := memstore.New()
		err := st.Create(ctx, store.Record{Kind: "sealing_check", AccountID: "sealing_check", ID: "sealing_check",
			Data: sealer.Seal([]byte(tc.plain), []byte("sealing_check"))})
		if err != nil {
			t.Fatal(err)
		}
		err = mustService(edgeplane.New(st, edgeplane.Options{SealingKey: key})).Host().CheckSealingKey(ctx)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.plain, err)
		case tc.want != "" && (apierr.CodeOf(err) != apierr.FailedPrecondition || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: got %v, want a failed precondition saying %q", tc.plain, err, tc.want)
		}
	}
}

func TestIDPrefixForPath(t *testing.T) {
	for path, want := range map[string]string{
		"/credentials":                      "cr_",
		"/backends/tunnel_group":            "bkdtg_",
		"/edges/https":                      "edghts_",
		"/edges/https/edghts_x/routes":      "edghtsrt_",
		"/edges/https/{edge_id}/routes":     "edghtsrt_",
		"/event_subscriptions":              "esb_",
		"/event_subscriptions/{id}/sources": "",
		"/edges/https/a/b/routes":           "",
		"/nothing":                          "",
	} {
		if got := edgeplane.IDPrefixForPath(path); got != want {
			t.Errorf("IDPrefixForPath(%q) = %q, want %q", path, got, want)
		}
	}
}
