package filter

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/policy/limits"
)

type doc struct {
	Name  string            `json:"name"`
	Body  string            `json:"body"`
	Tags  []string          `json:"tags"`
	Attrs map[string]string `json:"attrs"`
	Next  *doc              `json:"next"`
	Note  *string           `json:"note"`
	Skip  string            `json:"-"`
}

func TestCacheIsBounded(t *testing.T) {
	c := &Compiler{}
	first, err := Compile[doc](c, `obj.name == "0"`)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Compile[doc](c, `obj.name == "0"`)
	if again.program != first.program {
		t.Error("the same expression was compiled twice")
	}
	for i := range MaxCached + 10 {
		if _, err := Compile[doc](c, `obj.name == "`+strconv.Itoa(i+1)+`"`); err != nil {
			t.Fatal(err)
		}
		if n := c.cachedLen(); n > MaxCached {
			t.Fatalf("%d filters cached, want at most %d", n, MaxCached)
		}
	}
	if c.cachedLen() != MaxCached || len(c.index) != MaxCached {
		t.Errorf("cached %d (index %d), want %d", c.cachedLen(), len(c.index), MaxCached)
	}
	// The least recently used was evicted: compiling it again makes a new program.
	evicted, _ := Compile[doc](c, `obj.name == "0"`)
	if evicted.program == first.program {
		t.Error("the least recently used filter was not evicted")
	}
	// Failures are not cached.
	for range 2 {
		if _, err := Compile[doc](c, `obj.nam == "x"`); err == nil {
			t.Fatal("compiled obj.nam")
		}
	}
	if _, ok := c.lookup(cacheKey{typ: reflect.TypeFor[doc](), expr: `obj.nam == "x"`}); ok {
		t.Error("a failed compilation was cached")
	}
}

func TestReads(t *testing.T) {
	tests := []struct {
		expr  string
		field string
		want  bool
	}{
		{`obj.name == "a"`, "name", true},
		{`obj.name == "a"`, "tags", false},
		{`obj.next.tags == []`, "tags", false},
		{`obj.next.tags == []`, "next", true},
		{`size(obj.tags) > 0`, "tags", true},
		{`has(obj.tags)`, "tags", true},
		{`obj == obj.next`, "tags", true}, // obj as a whole: conservatively everything
		{`[obj].exists(o, o.name == "a")`, "tags", true},
	}
	for _, tc := range tests {
		f, err := Compile[doc](nil, tc.expr)
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		if got := f.Reads(tc.field); got != tc.want {
			t.Errorf("Compile(%q).Reads(%q) = %v, want %v", tc.expr, tc.field, got, tc.want)
		}
	}
}

// stored is a model as a Service may keep it: embedded, beside what the
// API does not show.
type stored struct {
	doc
	Secret []byte
	Admin  bool
}

// Only what JSON shows is seen: an untagged field is not, an embedded
// model's fields are.
func TestStoredTypeShowsOnlyTheModel(t *testing.T) {
	for _, expr := range []string{`size(obj.Secret) > 0`, `obj.Admin`, `obj.secret == b""`} {
		if _, err := Compile[stored](nil, expr); err == nil || !strings.Contains(err.Error(), "undefined field") {
			t.Errorf("Compile(%q) = %v, want undefined field", expr, err)
		}
	}
	f, err := Compile[stored](nil, `obj.name == "n" && obj.note == null && obj.next.name == "m"`)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Match(&stored{doc: doc{Name: "n", Next: &doc{Name: "m"}}, Secret: []byte("k"), Admin: true}) {
		t.Error("no match on the embedded model's fields")
	}
}

func TestJSONNames(t *testing.T) {
	for expr, want := range map[string]string{
		`obj.Skip == ""`: "undefined field 'Skip'",
		`obj.skip == ""`: "undefined field 'skip'",
		`obj.Name == ""`: "undefined field 'Name'",
	} {
		if _, err := Compile[doc](nil, expr); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Compile(%q) = %v, want %q", expr, err, want)
		}
	}
	v := &doc{Name: "n", Skip: "s", Next: &doc{Name: "m"}}
	f, err := Compile[doc](nil, `obj.next.name == "m" && obj.next.next == null && obj.note == null`)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Match(v) {
		t.Error("no match")
	}
}

// The evaluation budget stops an evaluation on an input longer than the
// estimate assumes: the resource does not match.
func TestEvaluationBudget(t *testing.T) {
	needle := strings.Repeat("x", 1000)
	f, err := Compile[doc](nil, `obj.body.contains("`+needle+`")`)
	if err != nil {
		t.Fatalf("within the estimate: %v", err)
	}
	short := &doc{Body: strings.Repeat("a", 1000) + needle}
	if !f.Match(short) {
		t.Fatal("a short body does not match")
	}
	if ok, c := f.Eval(short); !ok || c < 2000*1000/100 || c > 2000*1000/100+100 {
		t.Errorf("Eval = %v, cost %d, want true and about %d", ok, c, 2000*1000/100)
	}
	long := &doc{Body: strings.Repeat("a", 2<<20) + needle} // cost 2 Mi * 1000 / 100 > MaxEvaluationCost
	if f.Match(long) {
		t.Error("an evaluation beyond the budget matched")
	}
	if ok, c := f.Eval(long); ok || c != limits.MaxEvaluationCost {
		t.Errorf("Eval = %v, cost %d, want false and the whole budget", ok, c)
	}
	// Another runtime error costs what was evaluated.
	null, err := Compile[doc](nil, `obj.note.startsWith("a")`)
	if err != nil {
		t.Fatal(err)
	}
	if ok, c := null.Eval(&doc{}); ok || c > 10 {
		t.Errorf("Eval of a method on null = %v, cost %d, want false and a few units", ok, c)
	}
}
