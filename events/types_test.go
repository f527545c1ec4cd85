package events_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/events"
)

func TestParseType(t *testing.T) {
	tests := []struct {
		in      string
		name    string
		version int
		reason  string // substring of the violation; "" means valid
	}{
		{in: "ip_policy_created.v0", name: "ip_policy_created", version: 0},
		{in: "a.v1", name: "a", version: 1},
		{in: "x2_y.v123456789", name: "x2_y", version: 123456789},
		{in: "a.b.v2", reason: "only lowercase letters"},
		{in: "", reason: "is required"},
		{in: "ip_policy_created", reason: "version suffix .v<N> is missing"},
		{in: "ip_policy_created.V0", reason: "version suffix .v<N> is missing"},
		{in: ".v0", reason: "event name is empty"},
		{in: "a.v", reason: "version must be a number"},
		{in: "a.v01", reason: "without leading zeros"},
		{in: "a.v1234567890", reason: "version must be a number"},
		{in: "a.v-1", reason: "version must be a number"},
		{in: "a.v1x", reason: "version must be a number"},
		{in: "Ip_policy.v0", reason: "start with a lowercase letter"},
		{in: "1ip.v0", reason: "start with a lowercase letter"},
		{in: "_ip.v0", reason: "start with a lowercase letter"},
		{in: "ip-policy.v0", reason: "only lowercase letters, digits and underscores"},
		{in: "ip policy.v0", reason: "only lowercase letters, digits and underscores"},
		{in: "ip__policy.v0", reason: "two in a row"},
		{in: "ip_.v0", reason: "end with an underscore"},
		{in: strings.Repeat("a", 126) + ".v0", reason: "at most 128 bytes, got 129"},
		{in: strings.Repeat("a", 125) + ".v0", name: strings.Repeat("a", 125)},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			name, v, err := events.ParseType(tc.in)
			if tc.reason == "" {
				if err != nil || name != tc.name || v != tc.version {
					t.Fatalf("ParseType(%q) = %q, %d, %v; want %q, %d", tc.in, name, v, err, tc.name, tc.version)
				}
				return
			}
			vs := apierr.ViolationsOf(err)
			if len(vs) != 1 || vs[0].Field != "type" || !strings.Contains(vs[0].Reason, tc.reason) {
				t.Fatalf("ParseType(%q) error %v, want a violation of type containing %q", tc.in, err, tc.reason)
			}
		})
	}
}

func FuzzParseType(f *testing.F) {
	for _, s := range []string{"ip_policy_created.v0", "a.v1", "", ".v", "a.v01", "a__b.v0", "x.v9.v1", "é.v0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, v, err := events.ParseType(s)
		if err != nil {
			if apierr.CodeOf(err) != apierr.InvalidArgument {
				t.Fatalf("error %v is not invalid argument", err)
			}
			return
		}
		// A valid type round-trips through its parts.
		if got := name + ".v" + itoa(v); got != s {
			t.Fatalf("ParseType(%q) = %q, %d, which reads back as %q", s, name, v, got)
		}
		if len(s) > events.MaxTypeBytes || v < 0 {
			t.Fatalf("accepted %q", s)
		}
	})
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// testTypes are the types of the registry the tests use, a few of the
// Service's.
var testTypes = []string{"ip_policy_created.v0", "ip_policy_updated.v0", "ip_policy_deleted.v0", "credential_created.v0", "credential_deleted.v0",
	"tunnel_group_backend_updated.v0", "event_source_created.v0", "https_edge_route_oidc_module_updated.v0"}

func testRegistry(t testing.TB) *events.Registry {
	t.Helper()
	reg, err := events.NewRegistry(testTypes...)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func TestRegistryTypes(t *testing.T) {
	reg := testRegistry(t)
	if reg.Len() != len(testTypes) {
		t.Errorf("registry has %d types, want %d", reg.Len(), len(testTypes))
	}
	for _, typ := range testTypes {
		if !reg.Known(typ) {
			t.Errorf("registry does not know %q", typ)
		}
	}
	if !slices.IsSorted(reg.Types()) {
		t.Error("Types() is not sorted")
	}
	// Callers get copies.
	reg.Types()[0] = "changed"
	if reg.Types()[0] == "changed" {
		t.Error("Types returned shared state")
	}
	if events.TypeOf("credential", events.Deleted) != "credential_deleted.v0" {
		t.Error("TypeOf")
	}
}

func TestNewRegistry(t *testing.T) {
	reg, err := events.NewRegistry("b_done.v1", "a_done.v0", "b_done.v1")
	if err != nil {
		t.Fatal(err)
	}
	if got := reg.Types(); !slices.Equal(got, []string{"a_done.v0", "b_done.v1"}) {
		t.Errorf("Types() = %v", got)
	}
	_, err = events.NewRegistry("ok.v0", "Bad", "also bad.v0")
	vs := apierr.ViolationsOf(err)
	if len(vs) != 2 || vs[0].Field != "types[1]" || vs[1].Field != "types[2]" {
		t.Errorf("NewRegistry with bad types: %v", err)
	}
	many := make([]string, events.MaxTypes+1)
	for i := range many {
		many[i] = "t.v" + itoa(i)
	}
	_, err = events.NewRegistry(many...)
	if vs := apierr.ViolationsOf(err); len(vs) != 1 || vs[0].Field != "types" {
		t.Errorf("NewRegistry with %d types: %v", len(many), err)
	}
	if _, err := events.NewRegistry(many[1:]...); err != nil {
		t.Errorf("NewRegistry with %d types: %v", events.MaxTypes, err)
	}

	var nilReg *events.Registry
	if nilReg.Known("a.v0") || nilReg.Len() != 0 || len(nilReg.Types()) != 0 || nilReg.Closest("a.v0") != "" {
		t.Error("a nil registry is not empty")
	}
	wantReason(t, nilReg.Check("a.v0"), `unknown event type "a.v0"; no event types are known`)
}

func TestRegistryCheck(t *testing.T) {
	reg := testRegistry(t)
	tests := []struct {
		typ    string
		reason string // "" means known
	}{
		{typ: "ip_policy_created.v0"},
		{typ: "ip_policy_create.v0", reason: `unknown event type "ip_policy_create.v0"; did you mean "ip_policy_created.v0"?`},
		{typ: "ip_polcy_updated.v0", reason: `did you mean "ip_policy_updated.v0"?`},
		{typ: "ip_policy_created.v1", reason: `did you mean "ip_policy_created.v0"?`},
		{typ: "credentials_deleted.v0", reason: `did you mean "credential_deleted.v0"?`},
		{typ: "tunnel_group_backend_update.v0", reason: `did you mean "tunnel_group_backend_updated.v0"?`},
		{typ: "ip_policy_created", reason: "must have the shape <event_name>.v<N>"},
		{typ: "", reason: "is required"},
		{typ: strings.Repeat("x", 1000) + ".v0", reason: "at most 128 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.typ, func(t *testing.T) {
			err := reg.Check(tc.typ)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("Check(%q) = %v", tc.typ, err)
				}
				return
			}
			wantReason(t, err, tc.reason)
		})
	}
	// Ties go to the type that sorts first; input longer than any type is cut.
	small, _ := events.NewRegistry("ab.v0", "aa.v0")
	if got := small.Closest("ac.v0"); got != "aa.v0" {
		t.Errorf("Closest tie = %q, want aa.v0", got)
	}
	if got := small.Closest(strings.Repeat("a", 10_000)); got != "aa.v0" {
		t.Errorf("Closest(huge) = %q", got)
	}
}

func wantReason(t *testing.T, err error, reason string) {
	t.Helper()
	vs := apierr.ViolationsOf(err)
	if apierr.CodeOf(err) != apierr.InvalidArgument || len(vs) != 1 || vs[0].Field != "type" || !strings.Contains(vs[0].Reason, reason) {
		t.Fatalf("error %v (violations %v), want one violation of type containing %q", err, vs, reason)
	}
}

func TestSubscriptionParams(t *testing.T) {
	reg, err := events.NewRegistry("ip_policy_created.v0")
	if err != nil {
		t.Fatal(err)
	}
	if err := (events.CreateSubscriptionParams{Description: strings.Repeat("d", 255), Metadata: strings.Repeat("m", 4096)}).Validate(reg); err != nil {
		t.Errorf("at the limits: %v", err)
	}
	err = events.CreateSubscriptionParams{Description: strings.Repeat("é", 128), Metadata: strings.Repeat("m", 4097)}.Validate(reg)
	if vs := apierr.ViolationsOf(err); len(vs) != 2 || vs[0].Field != "description" || vs[1].Field != "metadata" {
		t.Errorf("over the limits: %v", err)
	}
	long := strings.Repeat("d", 256)
	err = events.UpdateSubscriptionParams{Description: &long}.Validate()
	if vs := apierr.ViolationsOf(err); len(vs) != 1 || vs[0].Field != "description" {
		t.Errorf("update over the limit: %v", err)
	}
	sub := events.Subscription{Description: "d", Metadata: "m"}
	empty := ""
	events.UpdateSubscriptionParams{Metadata: &empty}.Apply(&sub)
	if sub.Description != "d" || sub.Metadata != "" {
		t.Errorf("Apply = %+v", sub)
	}
	if err := (events.UpdateSourceParams{}).Validate(); err != nil {
		t.Errorf("UpdateSourceParams.Validate = %v", err)
	}
	if err := (events.CreateSourceParams{Type: "nope.v0"}).Validate(testRegistry(t)); apierr.CodeOf(err) != apierr.InvalidArgument {
		t.Errorf("CreateSourceParams.Validate(unknown) = %v", err)
	}
}

func BenchmarkRegistryCheckUnknown(b *testing.B) {
	reg := testRegistry(b)
	b.ReportAllocs()
	for b.Loop() {
		if reg.Check("tunnel_group_backend_update.v0") == nil {
			b.Fatal("known")
		}
	}
}
