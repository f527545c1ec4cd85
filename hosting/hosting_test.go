package hosting_test

import (
	"context"
	"errors"
	"testing"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/hosting"
)

// TestWaitRevision: without a wait of the Service's (no record cache),
// the roles' WaitRevision returns nil at once; with one, every role
// waits through it for the revision asked.
func TestWaitRevision(t *testing.T) {
	ctx := context.Background()
	if err := hosting.New(hosting.Config{}).WaitRevision(ctx, 42); err != nil {
		t.Fatalf("WaitRevision without a cache = %v, want nil", err)
	}
	stop := errors.New("stopped")
	var asked []int64
	r := hosting.New(hosting.Config{WaitRevision: func(_ context.Context, rev int64) error {
		asked = append(asked, rev)
		return stop
	}})
	for _, tc := range []struct {
		name string
		wait func(context.Context, int64) error
		rev  int64
	}{
		{"Roles", r.WaitRevision, 1},
		{"DataPlane", r.DataPlane().WaitRevision, 2},
		{"Certificates", r.Certificates().WaitRevision, 3},
	} {
		if err := tc.wait(ctx, tc.rev); !errors.Is(err, stop) {
			t.Errorf("%s.WaitRevision = %v, want the Service's error", tc.name, err)
		}
		if n := len(asked); n == 0 || asked[n-1] != tc.rev {
			t.Errorf("%s.WaitRevision(%d): the Service was asked %v", tc.name, tc.rev, asked)
		}
	}
}

// TestBadInput: the roles refuse bad input, naming the field, before
// they read anything (the zero Config has no store to read).
func TestBadInput(t *testing.T) {
	ctx := context.Background()
	r := hosting.New(hosting.Config{})
	for _, tc := range []struct {
		name, field string
		call        func() error
	}{
		{"EdgeByHostport, no port", "hostport", func() error {
			_, err := r.DataPlane().EdgeByHostport(ctx, "app.example.com")
			return err
		}},
		{"EdgeByHostport, empty", "hostport", func() error {
			_, err := r.DataPlane().EdgeByHostport(ctx, "")
			return err
		}},
		{"CertificateOrders, negative limit", "limit", func() error {
			_, err := r.Certificates().CertificateOrders(ctx, -1)
			return err
		}},
		{"ReportCertificateProgress, no message", "msg", func() error {
			_, err := r.Certificates().ReportCertificateProgress(ctx, "ac_1", "rd_1", "")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if apierr.CodeOf(err) != apierr.InvalidArgument {
				t.Fatalf("got %v, want invalid argument", err)
			}
			var e *apierr.Error
			if !errors.As(err, &e) || len(e.Violations) == 0 || e.Violations[0].Field != tc.field {
				t.Errorf("got %v, want a violation of %s", err, tc.field)
			}
		})
	}
}
