package validate_test

import (
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/internal/validate"
	"github.com/google/go-cmp/cmp"
)

type inner struct {
	Rate string `json:"rate" validate:"required"`
}

type params struct {
	Description string   `json:"description" validate:"maxbytes=255"`
	Name        string   `json:"name" validate:"maxrunes=3"`
	Kind        string   `json:"type" validate:"omitempty,oneof=api agent"`
	Issuer      string   `json:"issuer" validate:"omitempty,httpsurl"`
	Hook        string   `json:"hook" validate:"omitempty,httpurl"`
	IDs         []string `json:"ip_policy_ids" validate:"max=2,dive,required"`
	Count       int      `json:"count" validate:"lte=10,gte=1"`
	Config      inner    `json:"config"`
	Hidden      string   `json:"-" validate:"required"`
	NoTag       string   `validate:"min=2"`
	Tags        []string `json:"tags" validate:"unique,min=1"`
}

func valid() params {
	return params{Count: 1, Config: inner{Rate: "60s"}, Hidden: "x", NoTag: "ab", Tags: []string{"a"}}
}

func TestStruct(t *testing.T) {
	if err := validate.Struct(valid()); err != nil {
		t.Fatalf("valid params refused: %v", err)
	}
	tests := []struct {
		name   string
		mutate func(*params)
		want   apierr.Violation
	}{
		{"256 ascii bytes", func(p *params) { p.Description = strings.Repeat("a", 256) }, apierr.Violation{Field: "description", Reason: "must be at most 255 bytes, got 256"}},
		{"128 two-byte runes are 256 bytes", func(p *params) { p.Description = strings.Repeat("é", 128) }, apierr.Violation{Field: "description", Reason: "must be at most 255 bytes, got 256"}},
		{"runes counted as characters", func(p *params) { p.Name = "éééé" }, apierr.Violation{Field: "name", Reason: "must be at most 3 characters, got 4"}},
		{"oneof", func(p *params) { p.Kind = "web" }, apierr.Violation{Field: "type", Reason: "must be one of: api, agent"}},
		{"https url", func(p *params) { p.Issuer = "http://idp.example.com" }, apierr.Violation{Field: "issuer", Reason: "must be an absolute https URL"}},
		{"url with user info", func(p *params) { p.Issuer = "https://u:p@idp.example.com" }, apierr.Violation{Field: "issuer", Reason: "must be an absolute https URL"}},
		{"http url", func(p *params) { p.Hook = "ftp://x" }, apierr.Violation{Field: "hook", Reason: "must be an absolute http or https URL"}},
		{"list too long", func(p *params) { p.IDs = []string{"a", "b", "c"} }, apierr.Violation{Field: "ip_policy_ids", Reason: "must be at most 2 elements"}},
		{"element path", func(p *params) { p.IDs = []string{"a", ""} }, apierr.Violation{Field: "ip_policy_ids[1]", Reason: "is required"}},
		{"lte", func(p *params) { p.Count = 11 }, apierr.Violation{Field: "count", Reason: "must be at most 10"}},
		{"gte", func(p *params) { p.Count = 0 }, apierr.Violation{Field: "count", Reason: "must be at least 1"}},
		{"nested path", func(p *params) { p.Config.Rate = "" }, apierr.Violation{Field: "config.rate", Reason: "is required"}},
		{"field without json name", func(p *params) { p.NoTag = "a" }, apierr.Violation{Field: "NoTag", Reason: "must be at least 2 characters"}},
		{"unique", func(p *params) { p.Tags = []string{"a", "a"} }, apierr.Violation{Field: "tags", Reason: "must not contain duplicates"}},
		{"min elements", func(p *params) { p.Tags = []string{} }, apierr.Violation{Field: "tags", Reason: "must be at least 1 elements"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := valid()
			tc.mutate(&p)
			err := validate.Struct(p)
			if apierr.CodeOf(err) != apierr.InvalidArgument {
				t.Fatalf("got %v, want invalid argument", err)
			}
			if diff := cmp.Diff([]apierr.Violation{tc.want}, apierr.ViolationsOf(err)); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIntoPrefixAndBadInput(t *testing.T) {
	var vs apierr.Violations
	p := valid()
	p.Config.Rate = ""
	validate.Into(&vs, "actions[0]", p)
	if len(vs) != 1 || vs[0].Field != "actions[0].config.rate" {
		t.Errorf("Into with prefix = %v", vs)
	}
	vs = nil
	validate.Into(&vs, "x", 42) // not a struct: a programming error, reported not panicked
	if len(vs) != 1 || vs[0].Field != "x" {
		t.Errorf("Into(non-struct) = %v", vs)
	}
	if got := validate.Reason("weird", "", nil); got != "does not satisfy weird" {
		t.Errorf("Reason(unknown) = %q", got)
	}
}
