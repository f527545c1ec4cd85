package policy

import (
	"go/parser"
	gotoken "go/token"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// packageDoc returns the text of the package doc comment in doc.go.
func packageDoc(t *testing.T) string {
	t.Helper()
	f, err := parser.ParseFile(gotoken.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	if f.Doc == nil {
		t.Fatal("doc.go has no package doc")
	}
	return f.Doc.Text()
}

// docSection returns the text of section # heading of a package doc, up
// to the next heading.
func docSection(t *testing.T, doc, heading string) string {
	t.Helper()
	_, s, ok := strings.Cut(doc, "\n# "+heading+"\n")
	if !ok {
		t.Fatalf("the package doc has no section %q", heading)
	}
	if i := strings.Index(s, "\n# "); i >= 0 {
		s = s[:i]
	}
	return s
}

// docActions parses the list of built-in actions of section Actions: each
// item "  - <name>: <text>" (continued on lines indented further), mapped
// to its text with whitespace collapsed.
func docActions(t *testing.T, doc string) map[string]string {
	t.Helper()
	item := regexp.MustCompile(`^  - ([a-z][a-z-]*): (.*)$`)
	out := map[string]string{}
	var cur string
	for _, line := range strings.Split(docSection(t, doc, "Actions"), "\n") {
		if m := item.FindStringSubmatch(line); m != nil {
			if _, dup := out[m[1]]; dup {
				t.Errorf("the package doc lists action %s twice", m[1])
			}
			cur = m[1]
			out[cur] = m[2]
			continue
		}
		if cur != "" && strings.HasPrefix(line, "    ") {
			out[cur] += " " + strings.TrimSpace(line)
			continue
		}
		cur = ""
	}
	return out
}

// TestDocActions checks the package doc's list of actions (section
// Actions) against the registry of built-in actions: the same names, and
// "HTTP only" said of exactly the HTTP-only ones; and that section
// Compiling names the actions a connection policy allows.
func TestDocActions(t *testing.T) {
	doc := packageDoc(t)
	listed := docActions(t, doc)
	if len(listed) == 0 {
		t.Fatal("found no actions in the package doc's section Actions")
	}
	for _, bt := range builtinTypes() {
		text, ok := listed[bt.name]
		if !ok {
			t.Errorf("the package doc's section Actions does not list the built-in action %s", bt.name)
			continue
		}
		if says := strings.Contains(text, "HTTP only"); says != bt.httpOnly {
			t.Errorf("the package doc's item of %s says \"HTTP only\": %v; its registry entry says httpOnly: %v", bt.name, says, bt.httpOnly)
		}
		delete(listed, bt.name)
	}
	for name := range listed {
		t.Errorf("the package doc's section Actions lists %s, which is no built-in action", name)
	}
	want := "allows the " + connectionActions(builtinTypes()) + " actions"
	if got := strings.Join(strings.Fields(docSection(t, doc, "Compiling")), " "); !strings.Contains(got, want) {
		t.Errorf("the package doc's section Compiling does not say a connection policy %q", want)
	}
}

// TestDocResultVariables checks the actions.service.* rows of the package
// doc's table of variables (section Variables) against the result fields
// the built-in actions declare: the same names, types and availability (H
// for HTTP-only, C for connection policies too).
func TestDocResultVariables(t *testing.T) {
	type row struct{ typ, where string }
	documented := map[string]row{}
	for _, line := range strings.Split(docSection(t, packageDoc(t), "Variables"), "\n") {
		f := strings.Fields(line)
		if !strings.HasPrefix(line, "\t") || len(f) < 3 || !strings.HasPrefix(f[0], "actions.service.") {
			continue
		}
		if _, dup := documented[f[0]]; dup {
			t.Errorf("the package doc's table of variables has %s twice", f[0])
		}
		documented[f[0]] = row{f[1], f[2]}
	}
	if len(documented) == 0 {
		t.Fatal("found no actions.service.* rows in the package doc's table of variables")
	}
	typeNames := map[ResultType]string{ResultString: "string", ResultBool: "bool", ResultInt: "int"}
	var declared []string
	for _, bt := range builtinTypes() {
		for _, f := range bt.results {
			name := ResultVariable(bt.name, f.Name)
			declared = append(declared, name)
			want := row{typeNames[f.Type], "C"}
			if f.HTTPOnly {
				want.where = "H"
			}
			got, ok := documented[name]
			switch {
			case !ok:
				t.Errorf("the package doc's table of variables lacks %s, which %s sets", name, bt.name)
			case got != want:
				t.Errorf("the package doc's table of variables gives %s as %s %s; the registry declares %s %s", name, got.typ, got.where, want.typ, want.where)
			}
		}
	}
	for name := range documented {
		if !slices.Contains(declared, name) {
			t.Errorf("the package doc's table of variables has %s, which no built-in action sets", name)
		}
	}
}

// TestNeedHTTPMessage checks that refusing an HTTP-only action in a
// connection policy names the actions the registry allows there.
func TestNeedHTTPMessage(t *testing.T) {
	e, _ := newTestEngine(t, Options{})
	_, err := e.CompileJSON([]byte(`{"on_tcp_connect":[{"actions":[{"type":"add-headers","config":{"headers":{"a":"b"}}}]}]}`),
		CompileOptions{Target: TargetConnection})
	want := "on_tcp_connect[0].actions[0].type: add-headers is only available in HTTP policies; a TLS/TCP connection policy allows log, deny, restrict-ips and set-vars"
	if err == nil || !strings.HasSuffix(err.Error(), ": "+want) {
		t.Fatalf("got %v, want %s", err, want)
	}
}
