package edgeplane_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/store"
)

// fakeClock is an injected clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// env is a Service with two accounts: A (admin, user, bot) and B (admin).
type env struct {
	svc   *edgeplane.Service
	store store.Store
	clock *fakeClock
	ctx   context.Context

	admin, user, bot edgeplane.Principal // account A
	other            edgeplane.Principal // account B
	logs             *bytes.Buffer
	node             string // the node e.session's sessions name, registered by the first
}

// testHosts is the tests' resolver of event destinations' host names:
// every name under example.com is 127.0.0.1 (the receivers of the tests
// listen on loopback), private.example.net is private, and any other
// name does not exist.
type testHosts struct{}

func (testHosts) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	switch {
	case host == "example.com" || strings.HasSuffix(host, ".example.com"):
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	case host == "private.example.net":
		return []netip.Addr{netip.MustParseAddr("10.0.0.5"), netip.MustParseAddr("fd00::5")}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// testEvents returns opts with what the tests' destinations need: a
// resolver (testHosts) and loopback allowed, as -event-networks
// 127.0.0.0/8 does in development, when opts do not set them.
func testEvents(opts events.Options) events.Options {
	if opts.Resolver == nil {
		opts.Resolver = testHosts{}
	}
	if opts.Networks == nil {
		opts.Networks = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	}
	return opts
}

func newEnv(t testing.TB) *env {
	t.Helper()
	return newEnvWithStore(t, memstore.New())
}

// newEnvWithStore is newEnv on store; each of with changes the Service's
// options first.
func newEnvWithStore(t testing.TB, store store.Store, with ...func(*edgeplane.Options)) *env {
	t.Helper()
	e := &env{
		store: store,
		clock: &fakeClock{now: time.Date(2026, 11, 21, 10, 30, 15, 123456789, time.FixedZone("X", 3600))},
		ctx:   context.Background(),
		logs:  new(bytes.Buffer),
	}
	opts := edgeplane.Options{
		BaseURL: "https://api.example.test/",
		Clock:   e.clock.Now,
		Logger:  slog.New(slog.NewTextHandler(e.logs, nil)),
		Events:  testEvents(events.Options{}),
	}
	for _, f := range with {
		f(&opts)
	}
	e.svc = mustService(edgeplane.New(store, opts))
	a := e.account(t, "a")
	e.admin = e.subject(t, a, true, false)
	e.user = e.subject(t, a, false, false)
	e.bot = e.subject(t, a, false, true)
	e.other = e.subject(t, e.account(t, "b"), true, false)
	return e
}

func (e *env) account(t testing.TB, name string) string {
	t.Helper()
	acct, err := e.svc.Host().CreateAccount(e.ctx, identity.AccountParams{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return acct.ID
}

func (e *env) subject(t testing.TB, account string, admin, bot bool) edgeplane.Principal {
	t.Helper()
	create := e.svc.Host().CreateUser
	if bot {
		create = e.svc.Host().CreateBot
	}
	sub, err := create(e.ctx, account, identity.SubjectParams{Name: "someone", Admin: admin})
	if err != nil {
		t.Fatal(err)
	}
	return edgeplane.Principal{AccountID: account, SubjectID: sub.ID, Admin: admin}
}

func ptr[T any](v T) *T { return &v }

// wantCode fails the test unless err has the code.
func wantCode(t *testing.T, err error, code apierr.Code) {
	t.Helper()
	if got := apierr.CodeOf(err); got != code {
		t.Fatalf("got error %v (code %v), want code %v", err, got, code)
	}
}

// wantViolation fails the test unless err is invalid-argument with a
// violation of field whose reason contains reason.
func wantViolation(t *testing.T, err error, field, reason string) {
	t.Helper()
	wantCode(t, err, apierr.InvalidArgument)
	for _, v := range apierr.ViolationsOf(err) {
		if v.Field == field && strings.Contains(v.Reason, reason) {
			return
		}
	}
	t.Fatalf("error %v has no violation of %q containing %q (violations %v)", err, field, reason, apierr.ViolationsOf(err))
}

func TestNewDefaults(t *testing.T) {
	svc, err := edgeplane.New(memstore.New(), edgeplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.BaseURL() != edgeplane.DefaultBaseURL {
		t.Errorf("BaseURL() = %q, want %q", svc.BaseURL(), edgeplane.DefaultBaseURL)
	}
	ctx := context.Background()
	acct, err := svc.Host().CreateAccount(ctx, identity.AccountParams{Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(acct.CreatedAt) > time.Minute || acct.CreatedAt.Location() != time.UTC {
		t.Errorf("default clock gave %v", acct.CreatedAt)
	}
	defer func() {
		if recover() == nil {
			t.Error("New(nil, ...) did not panic")
		}
	}()
	mustService(edgeplane.New(nil, edgeplane.Options{}))
}

func TestPrincipalRequired(t *testing.T) {
	e := newEnv(t)
	bad := []edgeplane.Principal{
		{},
		{AccountID: e.admin.AccountID},
		{SubjectID: e.admin.SubjectID},
		{AccountID: "acct_x", SubjectID: e.admin.SubjectID},
		{AccountID: e.admin.AccountID, SubjectID: "someone"},
	}
	for _, p := range bad {
		_, err := e.svc.CreateCredential(e.ctx, p, credentials.CreateParams{})
		wantCode(t, err, apierr.Unauthenticated)
		_, err = e.svc.ListCredentials(e.ctx, p, edgeplane.ListOptions{})
		wantCode(t, err, apierr.Unauthenticated)
		_, err = e.svc.GetCredential(e.ctx, p, "cr_x")
		wantCode(t, err, apierr.Unauthenticated)
	}
}

func TestAccountsSubjectsAndAPIKeys(t *testing.T) {
	e := newEnv(t)
	ctx := e.ctx
	key, err := e.svc.Host().CreateAPIKey(ctx, e.admin.AccountID, identity.CreateAPIKeyParams{OwnerID: e.admin.SubjectID, Description: "ci"})
	if err != nil {
		t.Fatal(err)
	}
	if key.Token == nil || !strings.HasPrefix(*key.Token, identity.APIKeySecretPrefix) || len(*key.Token) != len(identity.APIKeySecretPrefix)+43 {
		t.Fatalf("API key token = %v, want %s + 43 base64url characters", key.Token, identity.APIKeySecretPrefix)
	}
	p, err := e.svc.Authenticate(ctx, *key.Token)
	if err != nil {
		t.Fatal(err)
	}
	if p != e.admin {
		t.Errorf("Authenticate = %+v, want %+v", p, e.admin)
	}
	botKey, err := e.svc.Host().CreateAPIKey(ctx, e.bot.AccountID, identity.CreateAPIKeyParams{OwnerID: e.bot.SubjectID})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := e.svc.Authenticate(ctx, *botKey.Token); err != nil || p != e.bot {
		t.Errorf("Authenticate(bot key) = %+v, %v; want %+v", p, err, e.bot)
	}

	for name, secret := range map[string]string{
		"empty":        "",
		"no prefix":    strings.TrimPrefix(*key.Token, identity.APIKeySecretPrefix),
		"one char off": flipLast(*key.Token),
		"too long":     *key.Token + strings.Repeat("a", 300),
	} {
		_, err := e.svc.Authenticate(ctx, secret)
		if apierr.CodeOf(err) != apierr.Unauthenticated || err.Error() != "the API key is missing, malformed or unknown" {
			t.Errorf("%s: Authenticate error = %v", name, err)
		}
	}

	if err := e.svc.Host().DeleteAPIKey(ctx, e.admin.AccountID, key.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.Authenticate(ctx, *key.Token)
	wantCode(t, err, apierr.Unauthenticated)
	wantCode(t, e.svc.Host().DeleteAPIKey(ctx, e.admin.AccountID, "ak_bad"), apierr.NotFound)
	wantCode(t, e.svc.Host().DeleteAPIKey(ctx, e.other.AccountID, botKey.ID), apierr.NotFound)

	// A host may provision a known secret; it must look like a key.
	known := identity.APIKeySecretPrefix + strings.Repeat("k", 40)
	if _, err := e.svc.Host().CreateAPIKey(ctx, e.admin.AccountID, identity.CreateAPIKeyParams{OwnerID: e.user.SubjectID, Secret: known}); err != nil {
		t.Fatal(err)
	}
	if p, err := e.svc.Authenticate(ctx, known); err != nil || p != e.user {
		t.Errorf("Authenticate(provisioned key) = %+v, %v", p, err)
	}
	_, err = e.svc.Host().CreateAPIKey(ctx, e.admin.AccountID, identity.CreateAPIKeyParams{OwnerID: e.user.SubjectID, Secret: known})
	wantCode(t, err, apierr.Conflict)
	for _, bad := range []string{"short", identity.APIKeySecretPrefix + "tooshort", strings.Repeat("x", 40)} {
		_, err = e.svc.Host().CreateAPIKey(ctx, e.admin.AccountID, identity.CreateAPIKeyParams{OwnerID: e.user.SubjectID, Secret: bad})
		wantViolation(t, err, "secret", "must start with")
	}

	// Keys need an owner of the same account.
	_, err = e.svc.Host().CreateAPIKey(ctx, e.admin.AccountID, identity.CreateAPIKeyParams{OwnerID: e.other.SubjectID})
	wantViolation(t, err, "owner_id", "not found")
	_, err = e.svc.Host().CreateAPIKey(ctx, e.admin.AccountID, identity.CreateAPIKeyParams{})
	wantViolation(t, err, "owner_id", "is required")

	// Subjects need an existing account and a name.
	_, err = e.svc.Host().CreateUser(ctx, "acct_missing", identity.SubjectParams{Name: "x"})
	wantCode(t, err, apierr.NotFound)
	missing := strings.Replace(e.admin.AccountID, e.admin.AccountID[len(e.admin.AccountID)-3:], "zzz", 1)
	_, err = e.svc.Host().CreateUser(ctx, missing, identity.SubjectParams{Name: "x"})
	wantCode(t, err, apierr.NotFound)
	_, err = e.svc.Host().CreateBot(ctx, e.admin.AccountID, identity.SubjectParams{})
	wantViolation(t, err, "name", "is required")
	_, err = e.svc.Host().CreateAccount(ctx, identity.AccountParams{Name: strings.Repeat("é", 128)})
	wantViolation(t, err, "name", "at most 255 bytes")
	_, err = e.svc.Host().GetSubject(ctx, e.admin.AccountID, "nobody")
	wantCode(t, err, apierr.NotFound)
	_, err = e.svc.Host().GetSubject(ctx, e.other.AccountID, e.admin.SubjectID)
	wantCode(t, err, apierr.NotFound)
}

// failingStore fails every call with an internal-looking error.
type failingStore struct{ store.Store }

var errDisk = errors.New("disk on fire at /var/lib/secret")

func (failingStore) List(context.Context, store.Query) ([]store.Record, error) {
	return nil, errDisk
}

func (failingStore) Get(context.Context, store.Kind, string, string) (store.Record, error) {
	return store.Record{}, errDisk
}

func TestInternalErrorsAreNotLeaked(t *testing.T) {
	e := newEnv(t)
	svc, err := edgeplane.New(failingStore{e.store}, edgeplane.Options{Logger: slog.New(slog.NewTextHandler(e.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.ListCredentials(e.ctx, e.admin, edgeplane.ListOptions{})
	wantCode(t, err, apierr.Internal)
	if strings.Contains(err.Error(), "disk") {
		t.Errorf("error message leaks the cause: %q", err.Error())
	}
	if !errors.Is(err, errDisk) {
		t.Error("the cause is not kept for errors.Is")
	}
	if !strings.Contains(e.logs.String(), "disk on fire") {
		t.Errorf("the cause was not logged; log: %s", e.logs.String())
	}
}

func TestContextCancellationPassesThrough(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	_, err := e.svc.CreateCredential(ctx, e.admin, credentials.CreateParams{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("CreateCredential with a cancelled context: %v", err)
	}
	_, err = e.svc.ListCredentials(ctx, e.admin, edgeplane.ListOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("ListCredentials with a cancelled context: %v", err)
	}
	page, err := e.svc.ListCredentials(e.ctx, e.admin, edgeplane.ListOptions{})
	if err != nil || len(page.Items) != 0 {
		t.Errorf("cancelled create stored something: %v %v", page, err)
	}
}

// TestNotFoundEchoesBoundedID: a 1 MiB ID is not echoed whole; the
// message still ends in "not found".
func TestNotFoundEchoesBoundedID(t *testing.T) {
	e := newEnv(t)
	_, err := e.svc.GetCredential(e.ctx, e.user, "cr_"+strings.Repeat("é", 1<<19))
	wantCode(t, err, apierr.NotFound)
	if msg := err.Error(); len(msg) > 120 || !strings.HasSuffix(msg, "… not found") || !utf8.ValidString(msg) {
		t.Errorf("message of %d bytes: %.200q", len(msg), msg)
	}
}

// TestAPIKeySecretIsTheHosts: a key's secret may be chosen through the
// Host only; a caller's CreateAPIKey that names one is refused, naming
// the field, and creates nothing.
func TestAPIKeySecretIsTheHosts(t *testing.T) {
	e := newEnv(t)
	known := identity.APIKeySecretPrefix + strings.Repeat("k", 40)
	_, err := e.svc.CreateAPIKey(e.ctx, e.admin, identity.CreateAPIKeyParams{Secret: known})
	wantViolation(t, err, "secret", "only the host")
	if _, err := e.svc.Authenticate(e.ctx, known); err == nil {
		t.Error("the refused secret authenticates")
	}
	if _, err := e.svc.Host().CreateAPIKey(e.ctx, e.admin.AccountID, identity.CreateAPIKeyParams{OwnerID: e.admin.SubjectID, Secret: known}); err != nil {
		t.Fatal(err)
	}
	if p, err := e.svc.Authenticate(e.ctx, known); err != nil || p != e.admin {
		t.Errorf("the host's secret authenticates as %+v, %v; want %+v", p, err, e.admin)
	}
}

// TestNewRefusesInvalidOptions: New answers invalid arguments with an
// invalid-argument error naming them, and no Service.
func TestNewRefusesInvalidOptions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store store.Store
		opts  edgeplane.Options
		want  string
	}{
		{"nil store", nil, edgeplane.Options{}, "store"},
		{"short key", memstore.New(), edgeplane.Options{SealingKey: make([]byte, 16)}, "SealingKey: must be 32 bytes, got 16"},
		{"long key", memstore.New(), edgeplane.Options{SealingKey: make([]byte, 33)}, "SealingKey: must be 32 bytes, got 33"},
		{"domains", memstore.New(), edgeplane.Options{Domains: domains.Config{OwnedDomains: []string{"*.bad"}}}, "Options.Domains"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, err := edgeplane.New(tc.store, tc.opts)
			if svc != nil || apierr.CodeOf(err) != apierr.InvalidArgument || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New = %v, %v; want no Service and an invalid-argument error naming %q", svc, err, tc.want)
			}
		})
	}
}
