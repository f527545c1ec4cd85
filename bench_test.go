package edgeplane_test

import (
	"testing"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/edgeplane/edgeplane/identity"
)

// Hot paths of the control plane: every API request authenticates, every
// agent connection authenticates its token.

func BenchmarkAuthenticate(b *testing.B) {
	e := newEnv(b)
	key, err := e.svc.Host().CreateAPIKey(e.ctx, e.admin.AccountID, identity.CreateAPIKeyParams{OwnerID: e.admin.SubjectID})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.svc.Authenticate(e.ctx, *key.Token); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAuthenticateTunnelToken(b *testing.B) {
	e := newEnv(b)
	c, err := e.svc.CreateCredential(e.ctx, e.admin, credentials.CreateParams{ACL: []string{"bind:*.example.com", "bind:env=prod"}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.svc.Host().AuthenticateTunnelToken(e.ctx, *c.Token); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetCredential(b *testing.B) {
	e := newEnv(b)
	c, err := e.svc.CreateCredential(e.ctx, e.admin, credentials.CreateParams{Description: "d"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.svc.GetCredential(e.ctx, e.admin, c.ID); err != nil {
			b.Fatal(err)
		}
	}
}

// The same read as the JSON the API answers, from the cached encoding.
func BenchmarkAppendCredentialJSON(b *testing.B) {
	e := newEnv(b)
	c, err := e.svc.CreateCredential(e.ctx, e.admin, credentials.CreateParams{Description: "d"})
	if err != nil {
		b.Fatal(err)
	}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		if buf, err = e.svc.Transport().AppendCredentialJSON(e.ctx, e.admin, c.ID, buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

// A 100-item page out of 10,000: cost must depend on the page, not the total.
func BenchmarkListCredentialsPage(b *testing.B) {
	e := newEnv(b)
	var mid string
	for i := range 10_000 {
		c, err := e.svc.CreateCredential(e.ctx, e.admin, credentials.CreateParams{})
		if err != nil {
			b.Fatal(err)
		}
		if i == 5_000 {
			mid = c.ID
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		page, err := e.svc.ListCredentials(e.ctx, e.admin, edgeplane.ListOptions{BeforeID: mid})
		if err != nil || len(page.Items) != 100 {
			b.Fatal(err, len(page.Items))
		}
	}
}

// The same page answered as its items' JSON (what the HTTP API asks
// for), from the encodings cached with the records.
func BenchmarkListCredentialsPageJSON(b *testing.B) {
	e := newEnv(b)
	var mid string
	for i := range 10_000 {
		c, err := e.svc.CreateCredential(e.ctx, e.admin, credentials.CreateParams{})
		if err != nil {
			b.Fatal(err)
		}
		if i == 5_000 {
			mid = c.ID
		}
	}
	var buf []byte
	tr := e.svc.Transport()
	b.ReportAllocs()
	for b.Loop() {
		page, err := tr.ListCredentials(e.ctx, e.admin, edgeplane.ListOptions{BeforeID: mid})
		if err != nil {
			b.Fatal(err)
		}
		buf = page.AppendItemsJSON(buf[:0])
	}
}

// Create and update: the write paths (encode, store write, change feed).
func BenchmarkCreateCredential(b *testing.B) {
	e := newEnv(b)
	params := credentials.CreateParams{Description: "d", ACL: []string{"bind:*.example.com"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.svc.CreateCredential(e.ctx, e.admin, params); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUpdateCredential(b *testing.B) {
	e := newEnv(b)
	c, err := e.svc.CreateCredential(e.ctx, e.admin, credentials.CreateParams{Description: "d"})
	if err != nil {
		b.Fatal(err)
	}
	desc := "renamed"
	params := credentials.UpdateParams{Description: &desc}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.svc.UpdateCredential(e.ctx, e.admin, c.ID, params); err != nil {
			b.Fatal(err)
		}
	}
}
