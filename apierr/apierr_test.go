package apierr_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/google/go-cmp/cmp"
)

// The wire forms are part of the API: this table pins them.
func TestWireForms(t *testing.T) {
	want := map[apierr.Code]string{
		apierr.InvalidArgument:      "ERR_SERVICE_100",
		apierr.NotFound:             "ERR_SERVICE_101",
		apierr.Conflict:             "ERR_SERVICE_102",
		apierr.FailedPrecondition:   "ERR_SERVICE_103",
		apierr.PermissionDenied:     "ERR_SERVICE_104",
		apierr.Unauthenticated:      "ERR_SERVICE_105",
		apierr.ResourceExhausted:    "ERR_SERVICE_106",
		apierr.Internal:             "ERR_SERVICE_107",
		apierr.MethodNotAllowed:     "ERR_SERVICE_108",
		apierr.PayloadTooLarge:      "ERR_SERVICE_109",
		apierr.UnsupportedMediaType: "ERR_SERVICE_110",
	}
	if len(apierr.Codes()) != len(want) {
		t.Fatalf("Codes() has %d codes, the table %d", len(apierr.Codes()), len(want))
	}
	names := map[string]bool{}
	for _, c := range apierr.Codes() {
		if c.Wire() != want[c] {
			t.Errorf("%v.Wire() = %q, want %q", c, c.Wire(), want[c])
		}
		if names[c.String()] || strings.HasPrefix(c.String(), "code(") {
			t.Errorf("code %d has a bad or duplicate name %q", int(c), c.String())
		}
		names[c.String()] = true
	}
	if got := apierr.Code(999).String(); got != "code(999)" {
		t.Errorf("unknown code String() = %q", got)
	}
}

func TestIsAndCodeOf(t *testing.T) {
	cause := errors.New("root cause")
	tests := []struct {
		name     string
		err      error
		code     apierr.Code
		sentinel error
	}{
		{"new", apierr.New(apierr.Conflict, "taken"), apierr.Conflict, apierr.ErrConflict},
		{"not found", apierr.NotFoundf("credential %s not found", "cr_1"), apierr.NotFound, apierr.ErrNotFound},
		{"conflictf", apierr.Conflictf("x"), apierr.Conflict, apierr.ErrConflict},
		{"wrapped by fmt", fmt.Errorf("ctx: %w", apierr.New(apierr.PermissionDenied, "no")), apierr.PermissionDenied, apierr.ErrPermissionDenied},
		{"bare sentinel", fmt.Errorf("x: %w", apierr.ErrResourceExhausted), apierr.ResourceExhausted, apierr.ErrResourceExhausted},
		{"wrap keeps cause", apierr.Wrap(apierr.Internal, cause, "internal error"), apierr.Internal, cause},
		{"violations", apierr.Invalidf("acl[2]", "bad"), apierr.InvalidArgument, apierr.ErrInvalidArgument},
		{"plain error", errors.New("boom"), apierr.Internal, nil},
		{"context", context.Canceled, apierr.Internal, context.Canceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := apierr.CodeOf(tc.err); got != tc.code {
				t.Errorf("CodeOf = %v, want %v", got, tc.code)
			}
			if tc.sentinel != nil && !errors.Is(tc.err, tc.sentinel) {
				t.Errorf("errors.Is(err, %v) = false", tc.sentinel)
			}
			for _, other := range []error{apierr.ErrNotFound, apierr.ErrConflict} {
				if other != tc.sentinel && errors.Is(tc.err, other) {
					t.Errorf("errors.Is(err, %v) = true", other)
				}
			}
		})
	}
	if apierr.CodeOf(nil) != 0 {
		t.Error("CodeOf(nil) != 0")
	}
	w := apierr.Wrap(apierr.Internal, cause, "internal error")
	if strings.Contains(w.Error(), "root cause") {
		t.Errorf("Wrap leaks the cause into the message: %q", w.Error())
	}
}

func TestViolations(t *testing.T) {
	var vs apierr.Violations
	if vs.Err() != nil {
		t.Fatal("empty Violations.Err() is not nil")
	}
	vs.Add("description", "must be at most %d bytes", 255)
	vs.Add("", "request must not be empty")
	inner := apierr.Violations{{Field: "rate", Reason: "too short"}, {Field: "[0]", Reason: "x"}}
	vs.AddError("config", inner.Err())
	vs.AddError("value", errors.New("plain"))
	vs.AddError("value", apierr.New(apierr.Conflict, "safe message"))
	vs.AddError("ignored", nil)
	err := vs.Err()
	want := []apierr.Violation{
		{Field: "description", Reason: "must be at most 255 bytes"},
		{Field: "", Reason: "request must not be empty"},
		{Field: "config.rate", Reason: "too short"},
		{Field: "config[0]", Reason: "x"},
		{Field: "value", Reason: "plain"},
		{Field: "value", Reason: "safe message"},
	}
	if diff := cmp.Diff(want, apierr.ViolationsOf(err)); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
	wantMsg := "invalid request: description: must be at most 255 bytes; request must not be empty; config.rate: too short; config[0]: x; value: plain; value: safe message"
	if err.Error() != wantMsg {
		t.Errorf("message = %q\nwant      %q", err.Error(), wantMsg)
	}
	// The error holds its own copy.
	vs[0].Reason = "changed"
	if apierr.ViolationsOf(err)[0].Reason == "changed" {
		t.Error("Err() shares the caller's slice")
	}
	if apierr.ViolationsOf(errors.New("x")) != nil {
		t.Error("ViolationsOf(plain) != nil")
	}
}

func TestJoinPath(t *testing.T) {
	for _, tc := range []struct{ a, b, want string }{
		{"", "x", "x"}, {"x", "", "x"}, {"config", "rate", "config.rate"}, {"acl", "[2]", "acl[2]"},
	} {
		if got := apierr.JoinPath(tc.a, tc.b); got != tc.want {
			t.Errorf("JoinPath(%q, %q) = %q, want %q", tc.a, tc.b, got, tc.want)
		}
	}
}

func ExampleViolations() {
	var vs apierr.Violations
	vs.Add("description", "must be at most 255 bytes, got %d", 300)
	vs.Add("acl[1]", "must start with bind:")
	err := vs.Err()
	fmt.Println(apierr.CodeOf(err), apierr.CodeOf(err).Wire())
	fmt.Println(err)
	// Output:
	// invalid argument ERR_SERVICE_100
	// invalid request: description: must be at most 255 bytes, got 300; acl[1]: must start with bind:
}

// TestViolationsMessageIsBounded: thousands of violations make a short
// message that counts the rest, and keep every violation in the list.
func TestViolationsMessageIsBounded(t *testing.T) {
	var vs apierr.Violations
	for i := range 5000 {
		vs.Add("f", "bad %d", i)
	}
	err := vs.Err()
	msg := err.Error()
	if len(msg) > 300 || !strings.HasSuffix(msg, "; and 4990 more") || !strings.Contains(msg, "f: bad 9;") || strings.Contains(msg, "bad 10;") {
		t.Errorf("message of %d bytes: %.300s", len(msg), msg)
	}
	if got := apierr.ViolationsOf(err); len(got) != 5000 {
		t.Errorf("%d violations kept, want 5000", len(got))
	}
	vs = vs[:3]
	if got := vs.Err().Error(); got != "invalid request: f: bad 0; f: bad 1; f: bad 2" {
		t.Errorf("a short list: %q", got)
	}
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"longer text", 6, "longer…"},
		{"héllo", 2, "h…"}, // é is two bytes: cut before it, never inside
		{"héllo", 3, "hé…"},
		{"😀x", 3, "…"},
		{"", 0, ""},
	} {
		if got := apierr.Truncate(tc.in, tc.n); got != tc.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
