package identity_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/identity"
)

func ptr[T any](v T) *T { return &v }

// TestValidate: every params type reports each broken rule naming its
// field, and accepts what the rules allow.
func TestValidate(t *testing.T) {
	long := strings.Repeat("x", 256)
	for _, tc := range []struct {
		name   string
		err    error
		fields []string
	}{
		{"bot ok", identity.CreateBotUserParams{Name: "ci"}.Validate(), nil},
		{"bot no name", identity.CreateBotUserParams{}.Validate(), []string{"name"}},
		{"bot long name", identity.CreateBotUserParams{Name: long}.Validate(), []string{"name"}},
		{"bot update ok", identity.UpdateBotUserParams{Active: ptr(false)}.Validate(), nil},
		{"bot update empty name", identity.UpdateBotUserParams{Name: ptr("")}.Validate(), []string{"name"}},
		{"bot update long name", identity.UpdateBotUserParams{Name: &long}.Validate(), []string{"name"}},
		{"key ok", identity.CreateAPIKeyParams{Description: "d", OwnerID: "bot_0123456789012345678901234567"[:31]}.Validate(), nil},
		{"key bad owner", identity.CreateAPIKeyParams{OwnerID: "cr_1"}.Validate(), []string{"owner_id"}},
		{"key long", identity.CreateAPIKeyParams{Description: long, Metadata: strings.Repeat("m", 4097)}.Validate(), []string{"description", "metadata"}},
		{"key update long", identity.UpdateAPIKeyParams{Description: &long}.Validate(), []string{"description"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.fields == nil {
				if tc.err != nil {
					t.Fatalf("unexpected error: %v", tc.err)
				}
				return
			}
			var ae *apierr.Error
			if !errors.As(tc.err, &ae) || ae.Code != apierr.InvalidArgument {
				t.Fatalf("got %v, want an invalid-argument error", tc.err)
			}
			var got []string
			for _, v := range ae.Violations {
				got = append(got, v.Field)
			}
			if strings.Join(got, ",") != strings.Join(tc.fields, ",") {
				t.Errorf("violations of %v, want %v", got, tc.fields)
			}
		})
	}
}

// TestBotUserDefaults: a bot is active unless created inactive; Apply
// changes only the fields present.
func TestBotUserDefaults(t *testing.T) {
	if b := (identity.CreateBotUserParams{Name: "a"}).BotUser(); !b.Active || b.Name != "a" {
		t.Errorf("default: %+v", b)
	}
	if b := (identity.CreateBotUserParams{Name: "a", Active: ptr(false)}).BotUser(); b.Active {
		t.Errorf("created inactive: %+v", b)
	}
	b := identity.BotUser{Name: "a", Active: true}
	identity.UpdateBotUserParams{Active: ptr(false)}.Apply(&b)
	if b.Active || b.Name != "a" {
		t.Errorf("after Apply: %+v", b)
	}
	k := identity.APIKey{Description: "d", Metadata: "m"}
	identity.UpdateAPIKeyParams{Metadata: ptr("")}.Apply(&k)
	if k.Description != "d" || k.Metadata != "" {
		t.Errorf("after Apply: %+v", k)
	}
}
