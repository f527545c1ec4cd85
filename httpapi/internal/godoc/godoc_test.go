package godoc_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/edgeplane/edgeplane/httpapi/internal/godoc"
	"github.com/google/go-cmp/cmp"
)

// write creates the files of a small module under a temporary directory.
func write(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, src := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestCollect(t *testing.T) {
	root := write(t, map[string]string{
		"service.go": `package edgeplane

// Service is the API.
type Service struct{}

// CreateThing creates a [things.Thing]; see [*Service.Other].
func (s *Service) CreateThing() {}

func (s *Service) Undocumented() {}

// helper is not exported.
func (s *Service) helper() {}
`,
		"things/thing.go": `package things

// Thing is a thing: see
// [Other].
//
// Second paragraph, acl[2] stays.
type Thing struct {
	// ID identifies it.
	ID string ` + "`json:\"id\"`" + `
	Name string ` + "`json:\"name\"`" + ` // Name names it.
	Bare string ` + "`json:\"bare\"`" + `
}

// Empty is an empty request body.
type Empty struct{}

// NoTags is not on the wire.
type NoTags struct{ X int }
`,
		"things/thing_test.go": `package things

// Tested is in a test file.
type Tested struct{ A int ` + "`json:\"a\"`" + ` }
`,
		"cmd/tool/main.go":   "package main\n\n// Tool is a command's.\ntype Tool struct{ A int `json:\"a\"` }\n",
		"internal/x/x.go":    "package x\n\n// X is internal.\ntype X struct{ A int `json:\"a\"` }\n",
		"other/go.mod":       "module other\n",
		"other/o.go":         "package other\n\n// O is another module's.\ntype O struct{ A int `json:\"a\"` }\n",
		"things/doc_only.go": "package things\n",
	})
	got, err := godoc.Collect(root)
	if err != nil {
		t.Fatal(err)
	}
	m := godoc.Module
	want := map[string]string{
		m + ".Service":              "Service is the API.", // an empty struct, as an empty request body is
		m + ".Service.CreateThing":  "CreateThing creates a things.Thing; see *Service.Other.",
		m + ".Service.Undocumented": "",
		m + "/things.Thing":         "Thing is a thing: see Other.\n\nSecond paragraph, acl[2] stays.",
		m + "/things.Thing.ID":      "ID identifies it.", // an initialism stays: it is a word of the prose too
		m + "/things.Thing.Name":    "name names it.",
		m + "/things.Thing.Bare":    "",
		m + "/things.Empty":         "Empty is an empty request body.",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Collect (-want +got):\n%s", diff)
	}
}

// TestWireLanguage: descriptions name constants by their values and
// fields by their JSON names, in their package and (constants) across
// packages; other Go names, a field name two structs spell differently,
// and a name qualified by a field's package stay as they are.
func TestWireLanguage(t *testing.T) {
	root := write(t, map[string]string{
		"rules/rules.go": `package rules

// Actions.
const (
	ActionAllow = "allow"
	ActionDeny  = "deny"
	MaxRules    = 1_000
	CodeBad     Code = 105
	unexported  = "x"
	Computed    = MaxRules * 2
)

// Code is an error code.
type Code int

// Rule is a rule: [ActionAllow] or ActionDeny, at most [MaxRules] of them; see [Other] and Computed, not CodeBad.
type Rule struct {
	// Action is ActionAllow or ActionDeny; CIDRBlock goes with it.
	Action string ` + "`json:\"action\"`" + `
	// CIDRBlock is the CIDR (not Action.Sub, not x.Action).
	CIDRBlock string ` + "`json:\"cidr\"`" + `
	// Clash is spelled two ways.
	Clash string ` + "`json:\"clash\"`" + `
}

// Other spells Clash otherwise.
type Other struct {
	// Clash is Other's.
	Clash string ` + "`json:\"other_clash\"`" + `
}
`,
		"sets/sets.go": `package sets

import "example/rules"

// MaxRules is the rules' bound.
const MaxRules = rules.MaxRules

// Set holds at most [rules.MaxRules] (MaxRules) rules, of rules.ActionDeny; its Rules are rules.
type Set struct {
	// Rules are the set's; CIDRBlock is rules', not this package's.
	Rules []string ` + "`json:\"rules\"`" + `
}
`,
	})
	got, err := godoc.Collect(root)
	if err != nil {
		t.Fatal(err)
	}
	m := godoc.Module
	want := map[string]string{
		m + "/rules.Rule":           "Rule is a rule: allow or deny, at most 1000 of them; see Other and Computed, not CodeBad.",
		m + "/rules.Rule.Action":    "action is allow or deny; cidr goes with it.",
		m + "/rules.Rule.CIDRBlock": "cidr is the CIDR (not action.Sub, not x.Action).",
		m + "/rules.Rule.Clash":     "Clash is spelled two ways.",
		m + "/rules.Other":          "Other spells Clash otherwise.",
		m + "/rules.Other.Clash":    "Clash is Other's.",
		m + "/sets.Set":             "Set holds at most 1000 (1000) rules, of deny; its rules are rules.",
		m + "/sets.Set.Rules":       "rules are the set's; CIDRBlock is rules', not this package's.",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Collect (-want +got):\n%s", diff)
	}
}

func TestGenerateIsGoSource(t *testing.T) {
	root := write(t, map[string]string{"a.go": "package edgeplane\n\n// T is \"quoted\".\ntype T struct{ A int `json:\"a\"` }\n"})
	src, err := godoc.Generate(root)
	if err != nil {
		t.Fatal(err)
	}
	want := `// Code generated by go run ./internal/godoc/gen; DO NOT EDIT.

package httpapi

// goDocs holds the doc comments of the wire types, their fields and the
// Service's methods, as plain text: the descriptions of the OpenAPI
// document. Regenerate it with go generate after changing a comment.
var goDocs = map[string]string{
	"github.com/edgeplane/edgeplane.T":   "T is \"quoted\".",
	"github.com/edgeplane/edgeplane.T.A": "",
}
`
	if diff := cmp.Diff(want, string(src)); diff != "" {
		t.Errorf("Generate (-want +got):\n%s", diff)
	}
}
