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
		m + ".Service":              "The API.", // an empty struct, as an empty request body is
		m + ".Service.CreateThing":  "Creates a thing.",
		m + ".Service.Undocumented": "",
		m + "/things.Thing":         "A thing: see Other.\n\nSecond paragraph, acl[2] stays.",
		m + "/things.Thing.ID":      "ID identifies it.", // an initialism stays: it is a word of the prose too
		m + "/things.Thing.Name":    "name names it.",
		m + "/things.Thing.Bare":    "",
		m + "/things.Empty":         "An empty request body.",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Collect (-want +got):\n%s", diff)
	}
}

// TestWireLanguage: descriptions name constants by their values and
// fields by their JSON names, in their package and (constants) across
// packages; Service methods as Service.<Method>, whichever way a comment
// names them; types, and constants of a named type, as words; a
// parameters type as the fields of its resource. A comment does not
// begin with the name it documents, and references to Go documentation
// are left out. A field name two structs spell differently, a name
// qualified by a variable, a function named in a sentence and a word of
// a hyphenated name stay as they are.
func TestWireLanguage(t *testing.T) {
	root := write(t, map[string]string{
		"service.go": `package edgeplane

// Service is the API.
type Service struct{}

// Host is what a host calls.
type Host interface{ Rules() }

// CreateRule creates a rule, as [Service.UpdateRule] and UpdateRule change one (see [*Service.DeleteRule]); see [Host.Rules].
func (s *Service) CreateRule() {}

// UpdateRule changes a rule. Service-Version names the version the Service speaks.
func (s *Service) UpdateRule() {}

// DeleteRule is the end of a rule.
func (s *Service) DeleteRule() {}
`,
		"rules/rules.go": `package rules

// Actions.
const (
	ActionAllow = "allow"
	ActionDeny  = "deny"
	MaxRules    = 1_000
	CodeBad     Code = 105
	CodeWorse
	unexported  = "x"
	Computed    = MaxRules * 2
	Prefix      = "svc."
)

// Zones are the zones a rule applies in.
var Zones = []string{"eu", "us"}

// Code is an error code.
type Code int

// Rule is a rule: [ActionAllow] or ActionDeny, at most [MaxRules] of them, refused with CodeBad or [CodeWorse]; Computed stays.
type Rule struct {
	// Action is ActionAllow or ActionDeny; CIDRBlock goes with it.
	Action string ` + "`json:\"action\"`" + `
	// CIDRBlock is the CIDR (not Action.Sub, not x.Action), normalised (see [Normalize]) as Normalize does.
	CIDRBlock string ` + "`json:\"cidr\"`" + `
	// Clash is spelled two ways.
	Clash string ` + "`json:\"clash\"`" + `
	// Zone is one of [Zones], Prefix by default; see [Rule.Check].
	Zone string ` + "`json:\"zone\"`" + `
}

// Normalize normalises a CIDR.
func Normalize() {}

// Other spells Clash otherwise.
type Other struct {
	// Clash is Other's.
	Clash string ` + "`json:\"other_clash\"`" + `
}

// CreateRuleParams are the parameters of creating a rule. See [Normalize] for how.
type CreateRuleParams struct {
	A string ` + "`json:\"a\"`" + `
}

// RuleParams replace a rule: CreateRuleParams and more.
type RuleParams struct {
	B string ` + "`json:\"b\"`" + `
}
`,
		"sets/sets.go": `package sets

import "example/rules"

// MaxRules is the rules' bound.
const MaxRules = rules.MaxRules

// Set holds at most [rules.MaxRules] (MaxRules) rules, of rules.ActionDeny, each a [rules.Rule]; its Rules are [rules.Rule]s.
type Set struct {
	// Rules are the set's; CIDRBlock is rules', not this package's, and rules.CodeBad theirs.
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
		m + ".Service":                  "The API.",
		m + ".Service.CreateRule":       "Creates a rule, as Service.UpdateRule and Service.UpdateRule change one (see Service.DeleteRule).",
		m + ".Service.UpdateRule":       "Changes a rule. Service-Version names the version the service speaks.",
		m + ".Service.DeleteRule":       "The end of a rule.",
		m + "/rules.Rule":               "A rule: allow or deny, at most 1000 of them, refused with code bad or code worse; Computed stays.",
		m + "/rules.Rule.Action":        "action is allow or deny; cidr goes with it.",
		m + "/rules.Rule.CIDRBlock":     "cidr is the CIDR (not Action.Sub, not x.Action), normalised as Normalize does.",
		m + "/rules.Rule.Clash":         "Clash is spelled two ways.",
		m + "/rules.Rule.Zone":          `zone is one of eu or us, "svc." by default.`,
		m + "/rules.Other":              "Other spells Clash otherwise.",
		m + "/rules.Other.Clash":        "Clash is other's.",
		m + "/rules.CreateRuleParams":   "The parameters of creating a rule.",
		m + "/rules.CreateRuleParams.A": "",
		m + "/rules.RuleParams":         "These parameters replace a rule: a rule's fields and more.",
		m + "/rules.RuleParams.B":       "",
		m + "/sets.Set":                 "Set holds at most 1000 (1000) rules, of deny, each a rule; its rules are rules.",
		m + "/sets.Set.Rules":           "rules are the set's; CIDRBlock is rules', not this package's, and code bad theirs.",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Collect (-want +got):\n%s", diff)
	}
}

// TestNames: every exported name the module declares, in any package
// (commands and internal ones too) but tests and another module's.
func TestNames(t *testing.T) {
	root := write(t, map[string]string{
		"a.go": `package edgeplane

const Const, unexported = 1, 2

var Var int

type Type struct {
	Field    int
	private  int
	Embedded
}

type Embedded struct{}

type Iface interface{ Method() }

func (Type) TypeMethod(Param int) {}

func Func() {}
`,
		"internal/x/x.go": "package x\n\nfunc Internal() {}\n",
		"cmd/c/main.go":   "package main\n\nfunc Command() {}\n",
		"a_test.go":       "package edgeplane\n\nfunc Tested() {}\n",
		"other/go.mod":    "module other\n",
		"other/o.go":      "package other\n\nfunc Other() {}\n",
	})
	got, err := godoc.Names(root)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"Const": true, "Var": true, "Type": true, "Field": true, "Embedded": true, "Iface": true,
		"Method": true, "TypeMethod": true, "Func": true, "Internal": true, "Command": true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
}

func TestGenerateIsGoSource(t *testing.T) {
	root := write(t, map[string]string{"a.go": "package edgeplane\n\n// T, \"quoted\".\ntype T struct{ A int `json:\"a\"` }\n"})
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
	"github.com/edgeplane/edgeplane.T":   "T, \"quoted\".",
	"github.com/edgeplane/edgeplane.T.A": "",
}
`
	if diff := cmp.Diff(want, string(src)); diff != "" {
		t.Errorf("Generate (-want +got):\n%s", diff)
	}
}
