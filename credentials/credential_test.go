package credentials_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/credentials"
)

const (
	userID = "usr_2abcdefghijklmnopqrstuvwxyz"
	botID  = "bot_2abcdefghijklmnopqrstuvwxyz"
)

func ptr[T any](v T) *T { return &v }

// fieldsOf returns the violation fields of err, failing the test if err is
// not an InvalidArgument error with violations (unless want is empty).
func fieldsOf(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	if !errors.Is(err, apierr.ErrInvalidArgument) {
		t.Fatalf("error %v is not an invalid-argument error", err)
	}
	var fields []string
	for _, v := range apierr.ViolationsOf(err) {
		if v.Reason == "" || strings.ToLower(v.Reason[:1]) != v.Reason[:1] {
			t.Errorf("violation %q: reason must be non-empty and lowercase", v)
		}
		fields = append(fields, v.Field)
	}
	if len(fields) == 0 {
		t.Fatalf("error %v has no violations", err)
	}
	return fields
}

// checkViolations checks that err has exactly the violation fields want and
// that each reason contains the matching entry of reasons (when given).
func checkViolations(t *testing.T, err error, want []string, reasons ...string) {
	t.Helper()
	got := fieldsOf(t, err)
	if !slices.Equal(got, want) {
		t.Fatalf("violation fields = %q, want %q (error: %v)", got, want, err)
	}
	vs := apierr.ViolationsOf(err)
	for i, r := range reasons {
		if !strings.Contains(vs[i].Reason, r) {
			t.Errorf("violation %d reason = %q, want it to contain %q", i, vs[i].Reason, r)
		}
	}
}

func TestCreateParamsValidate(t *testing.T) {
	tests := []struct {
		name    string
		p       credentials.CreateParams
		want    []string
		reasons []string
	}{
		{name: "empty", p: credentials.CreateParams{}},
		{name: "full", p: credentials.CreateParams{
			Description: "ci runner", Metadata: `{"team":"edge"}`,
			ACL:     []string{"*", "bind:example.com", "bind:*.example.com", "bind:1.tcp.example.com:20002", "bind:env=prod"},
			OwnerID: userID,
		}},
		{name: "bot owner", p: credentials.CreateParams{OwnerID: botID}},
		{name: "description at limit", p: credentials.CreateParams{Description: strings.Repeat("a", 255)}},
		{name: "description 256 bytes", p: credentials.CreateParams{Description: strings.Repeat("a", 256)},
			want: []string{"description"}, reasons: []string{"at most 255 bytes, got 256"}},
		{name: "description 128 two-byte runes", p: credentials.CreateParams{Description: strings.Repeat("é", 128)},
			want: []string{"description"}, reasons: []string{"at most 255 bytes"}},
		{name: "description 127 two-byte runes", p: credentials.CreateParams{Description: strings.Repeat("é", 127)}},
		{name: "metadata at limit", p: credentials.CreateParams{Metadata: strings.Repeat("m", 4096)}},
		{name: "metadata over limit", p: credentials.CreateParams{Metadata: strings.Repeat("m", 4097)},
			want: []string{"metadata"}, reasons: []string{"at most 4096 bytes"}},
		{name: "metadata multibyte over limit", p: credentials.CreateParams{Metadata: strings.Repeat("€", 1366)},
			want: []string{"metadata"}},
		{name: "bad acl rules", p: credentials.CreateParams{ACL: []string{"bind:ok.example.com", "allow:x", "bind:"}},
			want: []string{"acl[1]", "acl[2]"}},
		{name: "too many acl rules", p: credentials.CreateParams{ACL: slices.Repeat([]string{"*"}, 101)},
			want: []string{"acl"}, reasons: []string{"at most 100 rules, got 101"}},
		{name: "owner not an id", p: credentials.CreateParams{OwnerID: "alice"},
			want: []string{"owner_id"}, reasons: []string{"user ID"}},
		{name: "owner wrong prefix", p: credentials.CreateParams{OwnerID: "cr_2abcdefghijklmnopqrstuvwxyz"},
			want: []string{"owner_id"}},
		{name: "everything wrong at once", p: credentials.CreateParams{
			Description: strings.Repeat("d", 300), Metadata: strings.Repeat("m", 5000),
			ACL: []string{"bind:*.*.example.com", "*", "bind:a=b", "bind:a=b"}, OwnerID: "usr_short",
		}, want: []string{"description", "metadata", "acl[0]", "acl[3]", "owner_id"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkViolations(t, tt.p.Validate(), tt.want, tt.reasons...)
		})
	}
}

func TestUpdateParamsValidate(t *testing.T) {
	tests := []struct {
		name    string
		p       credentials.UpdateParams
		want    []string
		reasons []string
	}{
		{name: "empty", p: credentials.UpdateParams{}},
		{name: "clear everything", p: credentials.UpdateParams{Description: ptr(""), Metadata: ptr(""), ACL: ptr([]string{})}},
		{name: "nil acl inside pointer", p: credentials.UpdateParams{ACL: new([]string)}},
		{name: "valid", p: credentials.UpdateParams{Description: ptr("d"), Metadata: ptr("m"), ACL: ptr([]string{"bind:x.example.com"})}},
		{name: "description over limit", p: credentials.UpdateParams{Description: ptr(strings.Repeat("é", 128))},
			want: []string{"description"}, reasons: []string{"at most 255 bytes"}},
		{name: "metadata over limit", p: credentials.UpdateParams{Metadata: ptr(strings.Repeat("m", 4097))},
			want: []string{"metadata"}},
		{name: "bad acl", p: credentials.UpdateParams{ACL: ptr([]string{"bind:x.example.com", "bind:a:0"})},
			want: []string{"acl[1]"}},
		{name: "owner present", p: credentials.UpdateParams{OwnerID: ptr(userID)},
			want: []string{"owner_id"}, reasons: []string{"cannot be changed by update"}},
		{name: "owner present empty", p: credentials.UpdateParams{OwnerID: ptr("")},
			want: []string{"owner_id"}, reasons: []string{"cannot be changed by update"}},
		{name: "all wrong", p: credentials.UpdateParams{
			Description: ptr(strings.Repeat("d", 256)), Metadata: ptr(strings.Repeat("m", 4097)),
			ACL: ptr([]string{"nope"}), OwnerID: ptr(botID),
		}, want: []string{"description", "metadata", "acl[0]", "owner_id"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkViolations(t, tt.p.Validate(), tt.want, tt.reasons...)
		})
	}
}

func TestUpdateParamsApply(t *testing.T) {
	base := func() credentials.Credential {
		return credentials.Credential{ID: "cr_x", Description: "d", Metadata: "m", ACL: []string{"*"}, OwnerID: userID}
	}
	tests := []struct {
		name string
		p    credentials.UpdateParams
		want credentials.Credential
	}{
		{name: "nothing", p: credentials.UpdateParams{}, want: base()},
		{name: "set all", p: credentials.UpdateParams{Description: ptr("D"), Metadata: ptr("M"), ACL: ptr([]string{"bind:a.example.com"})},
			want: credentials.Credential{ID: "cr_x", Description: "D", Metadata: "M", ACL: []string{"bind:a.example.com"}, OwnerID: userID}},
		{name: "clear", p: credentials.UpdateParams{Description: ptr(""), Metadata: ptr(""), ACL: new([]string)},
			want: credentials.Credential{ID: "cr_x", ACL: []string{}, OwnerID: userID}},
		{name: "owner ignored", p: credentials.UpdateParams{OwnerID: ptr(botID)}, want: base()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base()
			tt.p.Apply(&c)
			if !equalCredential(c, tt.want) {
				t.Fatalf("after Apply: %+v, want %+v", c, tt.want)
			}
			if c.ACL == nil {
				t.Fatal("ACL is nil after Apply")
			}
		})
	}
}

func TestUpdateParamsApplyCopiesACL(t *testing.T) {
	acl := []string{"bind:a.example.com"}
	var c credentials.Credential
	credentials.UpdateParams{ACL: &acl}.Apply(&c)
	acl[0] = "*"
	if c.ACL[0] != "bind:a.example.com" {
		t.Fatalf("Apply aliased the caller's slice: %q", c.ACL)
	}
}

// equalCredential compares deeply; a nil ACL differs from an empty one.
func equalCredential(a, b credentials.Credential) bool { return reflect.DeepEqual(a, b) }

func TestCreateParamsCredential(t *testing.T) {
	tests := []struct {
		name string
		p    credentials.CreateParams
		want credentials.Credential
	}{
		{name: "empty", p: credentials.CreateParams{}, want: credentials.Credential{ACL: []string{}}},
		{name: "full", p: credentials.CreateParams{Description: "d", Metadata: "m", ACL: []string{"*"}, OwnerID: botID},
			want: credentials.Credential{Description: "d", Metadata: "m", ACL: []string{"*"}, OwnerID: botID}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.p.Credential()
			if !equalCredential(got, tt.want) || got.ACL == nil {
				t.Fatalf("Credential() = %+v, want %+v", got, tt.want)
			}
			if len(tt.p.ACL) > 0 {
				got.ACL[0] = "changed"
				if tt.p.ACL[0] == "changed" {
					t.Fatal("Credential() aliased the params' ACL")
				}
			}
		})
	}
}

func TestCredentialClone(t *testing.T) {
	c := credentials.Credential{ID: "cr_x", Token: ptr("tok"), ACL: []string{"*"}}
	d := c.Clone()
	*d.Token = "other"
	d.ACL[0] = "bind:a.example.com"
	if *c.Token != "tok" || c.ACL[0] != "*" {
		t.Fatalf("Clone shares memory with the original: %+v", c)
	}
	if e := (credentials.Credential{}).Clone(); e.ACL == nil || e.Token != nil {
		t.Fatalf("Clone of zero credential = %+v, want empty non-nil ACL and nil token", e)
	}
}

func TestCredentialJSON(t *testing.T) {
	c := credentials.Credential{ID: "cr_x", ACL: []string{}, OwnerID: userID}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"cr_x","uri":"","created_at":"0001-01-01T00:00:00Z","description":"","metadata":"","token":null,"acl":[],"owner_id":"` + userID + `"}`
	if string(b) != want {
		t.Fatalf("JSON = %s\nwant   %s", b, want)
	}
}

func TestUpdateParamsJSONNullIsAbsent(t *testing.T) {
	var p credentials.UpdateParams
	if err := json.Unmarshal([]byte(`{"description":null,"acl":null,"owner_id":null,"metadata":""}`), &p); err != nil {
		t.Fatal(err)
	}
	if p.Description != nil || p.ACL != nil || p.OwnerID != nil || p.Metadata == nil {
		t.Fatalf("decoded %+v: nulls must be absent, \"\" present", p)
	}
	if err := p.Validate(); err != nil {
		t.Fatalf("Validate() = %v, want nil", err)
	}
}

func TestValidOwnerID(t *testing.T) {
	tests := []struct {
		id   string
		want bool
	}{
		{userID, true},
		{botID, true},
		{"", false},
		{"usr_", false},
		{"usr_2abcdefghijklmnopqrstuvwxy!", false},
		{"cr_2abcdefghijklmnopqrstuvwxyz", false},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			if got := credentials.ValidOwnerID(tt.id); got != tt.want {
				t.Fatalf("ValidOwnerID(%q) = %v, want %v", tt.id, got, tt.want)
			}
		})
	}
}
