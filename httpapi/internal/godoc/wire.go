package godoc

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// pkg is one parsed package of the module.
type pkg struct {
	importPath string
	name       string // the last element of importPath ("edgeplane" for the root)
	root       bool
	files      []*ast.File // in the order of their names
}

// parse parses the packages of the module rooted at root: not test
// files, not testdata, not another module's. With wireOnly, only those
// Collect reads: not the cmd, examples and internal trees either.
func parse(root string, wireOnly bool) ([]*pkg, error) {
	var out []*pkg
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if path != root {
			name := d.Name()
			if name == "testdata" || strings.HasPrefix(name, ".") || wireOnly && (skipDirs[name] || name == "internal") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		importPath := Module
		if rel != "." {
			importPath += "/" + filepath.ToSlash(rel)
		}
		parsed, err := parser.ParseDir(token.NewFileSet(), path, func(fi fs.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, ap := range parsed {
			p := &pkg{importPath: importPath, name: importPath[strings.LastIndex(importPath, "/")+1:], root: rel == "."}
			names := make([]string, 0, len(ap.Files))
			for name := range ap.Files {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				p.files = append(p.files, ap.Files[name])
			}
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

// declKind says what an exported name of a package declares.
type declKind int

const (
	declNone declKind = iota
	declType
	declFunc
	declConst
	declVar
)

// wire says how Go names read on the wire, by package name: its exported
// constants with a literal value (as that value) and variables listing
// strings (as the list: "au, eu or us"), the fields of its
// structs with a json tag (as their JSON names), its other exported
// names (types and constants as words, functions not at all), and the
// root package's Service methods (as "Service.<Method>", which package
// httpapi writes as the operation that calls the method).
type wire struct {
	root    string                         // the root package's name
	consts  map[string]map[string]string   // package name -> constant (or variable listing strings) -> value
	fields  map[string]map[string]string   // package name -> Go field name -> JSON name ("" when two structs disagree)
	decls   map[string]map[string]declKind // package name -> exported package-level name -> what it declares
	enums   map[string]map[string]bool     // package name -> constant of a named type (apierr.InvalidArgument)
	methods map[string]bool                // the exported methods of the root package's Service
}

func newWire(pkgs []*pkg) *wire {
	w := &wire{consts: map[string]map[string]string{}, fields: map[string]map[string]string{},
		decls: map[string]map[string]declKind{}, enums: map[string]map[string]bool{}, methods: map[string]bool{}}
	// Constants defined as another constant (edges.MaxIPPolicies =
	// ipaccess.MaxIPPolicies) take its value once every package is read.
	type alias struct{ pkg, name, ofPkg, of string }
	var aliases []alias
	for _, p := range pkgs {
		if p.root {
			w.root = p.name
		}
		if w.consts[p.name] == nil {
			w.consts[p.name], w.fields[p.name], w.decls[p.name] = map[string]string{}, map[string]string{}, map[string]declKind{}
		}
		if w.enums[p.name] == nil {
			w.enums[p.name] = map[string]bool{}
		}
		consts, fields, decls, enums := w.consts[p.name], w.fields[p.name], w.decls[p.name], w.enums[p.name]
		for _, f := range p.files {
			for _, decl := range f.Decls {
				if fn, ok := decl.(*ast.FuncDecl); ok {
					switch {
					case fn.Recv == nil && fn.Name.IsExported():
						decls[fn.Name.Name] = declFunc
					case fn.Recv != nil && p.root && fn.Name.IsExported() && receiver(fn) == "Service":
						w.methods[fn.Name.Name] = true
					}
					continue
				}
				gd := decl.(*ast.GenDecl)
				var typ ast.Expr // of a const block's spec, which may repeat the previous one's
				for _, spec := range gd.Specs {
					switch spec := spec.(type) {
					case *ast.ValueSpec:
						kind := declVar
						if gd.Tok == token.CONST {
							kind = declConst
							if spec.Type != nil || len(spec.Values) > 0 {
								typ = spec.Type
							}
						}
						for i, name := range spec.Names {
							if !name.IsExported() {
								continue
							}
							decls[name.Name] = kind
							if kind != declConst {
								if i < len(spec.Values) {
									if v, ok := stringList(spec.Values[i]); ok {
										consts[name.Name] = v
									}
								}
								continue
							}
							if id, ok := typ.(*ast.Ident); ok && !plainNumbers[id.Name] && id.Name != "string" {
								enums[name.Name] = true
							}
							if i >= len(spec.Values) {
								continue
							}
							if v, ok := literal(spec.Values[i], spec.Type); ok {
								consts[name.Name] = v
							} else if of, ok := constRef(spec.Values[i], p.name); ok && spec.Type == nil {
								aliases = append(aliases, alias{p.name, name.Name, of[0], of[1]})
							}
						}
					case *ast.TypeSpec:
						if spec.Name.IsExported() {
							decls[spec.Name.Name] = declType
						}
						if st, ok := spec.Type.(*ast.StructType); ok {
							addFields(fields, st)
						}
					}
				}
			}
		}
	}
	// An alias of an alias takes its value in as many rounds as the chain
	// is long.
	for changed := true; changed; {
		changed = false
		for _, a := range aliases {
			if v, ok := w.consts[a.ofPkg][a.of]; ok && w.consts[a.pkg][a.name] != v {
				w.consts[a.pkg][a.name], changed = v, true
			}
		}
	}
	return w
}

// constRef returns the package name and name of the constant e names:
// pkg.Name, or Name of package pkgName.
func constRef(e ast.Expr, pkgName string) ([2]string, bool) {
	switch e := e.(type) {
	case *ast.Ident:
		return [2]string{pkgName, e.Name}, true
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok {
			return [2]string{x.Name, e.Sel.Name}, true
		}
	}
	return [2]string{}, false
}

// addFields records the JSON names of st's fields whose Go names differ.
func addFields(fields map[string]string, st *ast.StructType) {
	for _, f := range st.Fields.List {
		json := jsonName(f)
		for _, name := range f.Names {
			if json == "" || json == "-" || json == name.Name || strings.ToUpper(name.Name) == name.Name {
				continue // an initialism (ID, IP, URI) is a word of the prose too
			}
			if old, seen := fields[name.Name]; seen && old != json {
				fields[name.Name] = ""
				continue
			}
			fields[name.Name] = json
		}
	}
}

// literal returns the wire form of a constant's value, of type typ (nil
// when untyped): a string's text (quoted when it holds a space or ends
// in punctuation, which the prose would blur), an untyped or plain number's digits
// (without Go's underscores); ok is false for any other expression, and
// for a number of a named type (an error code, say), whose wire form is
// not its number.
func literal(e ast.Expr, typ ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok {
		return "", false
	}
	switch lit.Kind {
	case token.STRING:
		v, err := strconv.Unquote(lit.Value)
		if err != nil || v == "" {
			return "", false
		}
		if r, _ := utf8.DecodeLastRuneInString(v); strings.ContainsAny(v, " \t\n\"") || !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return strconv.Quote(v), true // "service.", "a b": where the value ends is plain
		}
		return v, true
	case token.INT, token.FLOAT:
		if id, named := typ.(*ast.Ident); typ != nil && (!named || !plainNumbers[id.Name]) {
			return "", false
		}
		return strings.ReplaceAll(lit.Value, "_", ""), true
	}
	return "", false
}

// stringList returns the wire form of a variable's value that is a list
// of string literals ([]string{"au", "eu", "us"}): "au, eu or us".
func stringList(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.CompositeLit)
	if !ok || len(lit.Elts) == 0 {
		return "", false
	}
	if at, ok := lit.Type.(*ast.ArrayType); !ok || !isIdent(at.Elt, "string") {
		return "", false
	}
	vs := make([]string, len(lit.Elts))
	for i, e := range lit.Elts {
		if b, ok := e.(*ast.BasicLit); !ok || b.Kind != token.STRING {
			return "", false
		}
		v, ok := literal(e, nil)
		if !ok {
			return "", false
		}
		vs[i] = v
	}
	if len(vs) == 1 {
		return vs[0], true
	}
	return strings.Join(vs[:len(vs)-1], ", ") + " or " + vs[len(vs)-1], true
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// plainNumbers are the types of numeric constants written as numbers.
var plainNumbers = map[string]bool{"int": true, "int64": true, "int32": true, "uint": true, "uint32": true, "uint64": true, "float64": true}

// jsonName returns the name of a field's json tag, "" without one.
func jsonName(f *ast.Field) string {
	if f.Tag == nil {
		return ""
	}
	tag, err := strconv.Unquote(f.Tag.Value)
	if err != nil {
		return ""
	}
	name, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
	return name
}

// goRef is a Go name a comment mentions: an exported identifier,
// qualified by a package name or not, possibly a pointer, possibly
// followed by selectors (*pkg.Type.Method).
const goRef = `\*?(?:[a-z]\w*\.)?[A-Z]\w*(?:\.[A-Z]\w*)*`

// goName matches a Go name a comment mentions, not preceded by a word
// character, a dot, a bracket (as in acl[2] or x.Y) or a hyphen (as in
// Service-Operation-Id); translate also checks that no hyphen follows.
var goName = regexp.MustCompile(`(^|[^\w.\]\-*])(` + goRef + `)`)

// The references to Go documentation that say nothing on the wire,
// dropped when every name they list is a Go name without a wire form:
// a parenthesis, "(see ParseName)", "([Host.RegisterTunnel])", "(see
// [Host.TLSEdgeConfig] for how it runs)"; a clause, "; see
// [OIDC.EffectiveCookiePrefix]"; a sentence, "See [ParseName]."
var (
	refList      = goRef + `(?:(?:, | and | or )` + goRef + `)*`
	seeParen     = regexp.MustCompile(` ?\((?:see )?(` + refList + `)(?: for [^()]*)?\)`)
	seeClause    = regexp.MustCompile(`[,;:] see (` + refList + `)(?: for [^().;]*)?([.;)]|$)`)
	seeSentence  = regexp.MustCompile(`(^|\s)See (` + refList + `)(?: for [^.]*)?\.(?:\s+|$)`)
	refSeparator = regexp.MustCompile(`, | and | or `)
)

// dropRefs removes from text, a comment of package p, the references to
// Go documentation that have no wire form.
func (w *wire) dropRefs(p *pkg, text string) string {
	goOnly := func(list string) bool {
		for _, ref := range refSeparator.Split(list, -1) {
			if !w.goOnly(p, ref) {
				return false
			}
		}
		return true
	}
	text = replaceSubmatches(seeParen, text, func(m []string) string {
		if goOnly(m[1]) {
			return ""
		}
		return m[0]
	})
	text = replaceSubmatches(seeClause, text, func(m []string) string {
		if goOnly(m[1]) {
			return m[2]
		}
		return m[0]
	})
	return replaceSubmatches(seeSentence, text, func(m []string) string {
		if goOnly(m[2]) {
			return m[1]
		}
		return m[0]
	})
}

// replaceSubmatches is ReplaceAllStringFunc with the submatches.
func replaceSubmatches(re *regexp.Regexp, text string, f func([]string) string) string {
	return re.ReplaceAllStringFunc(text, func(m string) string { return f(re.FindStringSubmatch(m)) })
}

// goOnly reports whether ref, mentioned in a comment of package p, is a
// Go name of the module without a wire form (not a constant with a
// value, a field with a JSON name or a Service method, which has an
// operation): another name of p, of the root package or of a named
// package, a selector on one of their types, or on a variable (x.Y).
func (w *wire) goOnly(p *pkg, ref string) bool {
	if _, how := w.render(p, ref); how == asWire {
		return false
	}
	parts := strings.Split(strings.TrimPrefix(ref, "*"), ".")
	pkgName, qualified := p.name, false
	if isLower(parts[0]) {
		if w.decls[parts[0]] == nil {
			return true // a variable's field or method: p.ClientIP
		}
		pkgName, parts, qualified = parts[0], parts[1:], true
	}
	kind := w.kindOf(pkgName, parts[0], qualified)
	return kind != declNone && (len(parts) == 1 || kind == declType)
}

// kindOf returns what name declares in package pkgName; when not
// qualified, in the root package too (its names are the API's, which
// every package's comments mention).
func (w *wire) kindOf(pkgName, name string, qualified bool) declKind {
	if k := w.decls[pkgName][name]; k != declNone || qualified {
		return k
	}
	return w.decls[w.root][name]
}

// translate writes the Go names of text, a comment of package p, in the
// wire's language ([wire.render]); names it cannot write stay as they are.
func (w *wire) translate(p *pkg, text string) string {
	var b strings.Builder
	last := 0
	for _, m := range goName.FindAllStringSubmatchIndex(text, -1) {
		start, end := m[4], m[5]
		if end < len(text) && text[end] == '-' {
			continue // a word of a hyphenated name (Service-Version)
		}
		out, how := w.render(p, text[start:end])
		if how == unchanged {
			continue
		}
		if how == asWords && sentenceStart(text[:start]) {
			out = upperFirst(out) // a wire form is as typed: created_at
		}
		b.WriteString(text[last:start])
		b.WriteString(out)
		last = end
	}
	b.WriteString(text[last:])
	return b.String()
}

// render returns the wire form of the Go name ref mentioned in a comment
// of package p:
//
//   - a method of the root package's Service (Service.CreateTLSEdge,
//     [*Service.CreateTLSEdge], or CreateTLSEdge when p declares no such
//     name) as Service.<Method>: package httpapi writes it as the
//     operation that calls it (POST /edges/tls);
//   - a field of p's structs as its JSON name (CreatedAt: created_at);
//   - a constant with a literal value as that value (ActionAllow: allow);
//   - a parameters type as the fields of the resource it is of
//     (CreateTLSEdgeParams: a TLS edge's fields);
//   - another type, or a constant of a named type without a literal
//     value, as its words (HTTPSRoute: HTTPS route, Service: service,
//     apierr.InvalidArgument: invalid argument), plural when the comment
//     writes it so ([HTTPSRoute]s).
//
// Any other name (a function, a method of another type, a name the
// module does not declare) stays unchanged.
func (w *wire) render(p *pkg, ref string) (string, rendering) {
	parts := strings.Split(strings.TrimPrefix(ref, "*"), ".")
	pkgName, qualified := p.name, false
	if isLower(parts[0]) {
		if w.decls[parts[0]] == nil {
			return "", unchanged // x.Action: a variable's, not a package's
		}
		pkgName, parts, qualified = parts[0], parts[1:], true
	}
	if len(parts) == 2 && parts[0] == "Service" && w.methods[parts[1]] && (pkgName == w.root || !qualified) {
		return "Service." + parts[1], asWire
	}
	if len(parts) != 1 {
		return "", unchanged
	}
	name := parts[0]
	if json := w.fields[pkgName][name]; json != "" && !qualified {
		return json, asWire
	}
	if v, ok := w.consts[pkgName][name]; ok {
		return v, asWire
	}
	if w.methods[name] && !qualified && w.decls[p.name][name] == declNone {
		return "Service." + name, asWire
	}
	kind, plural := w.kindOf(pkgName, name, qualified), ""
	if kind == declNone && strings.HasSuffix(name, "s") {
		if k := w.kindOf(pkgName, strings.TrimSuffix(name, "s"), qualified); k == declType {
			kind, name, plural = k, strings.TrimSuffix(name, "s"), "s"
		}
	}
	switch {
	case kind == declType && plural == "" && strings.HasSuffix(name, "Params"):
		return paramsOf(name, pkgName), asWords
	case kind == declType || kind == declConst && w.enums[pkgName][name]:
		return words(name) + plural, asWords
	}
	return "", unchanged
}

// rendering says how render writes a Go name.
type rendering int

const (
	unchanged rendering = iota // as it is: the name has no wire form
	asWire                     // as its wire form: a value, a JSON name, an operation
	asWords                    // as words, which refer to no Go documentation
)

// paramsOf writes a parameters type as the fields of the resource they
// are of: CreateTLSEdgeParams is "a TLS edge's fields", and
// credentials.UpdateParams "a credential's fields".
func paramsOf(name, pkgName string) string {
	res := strings.TrimSuffix(name, "Params")
	for _, verb := range []string{"Create", "Update", "Replace"} {
		if r, ok := strings.CutPrefix(res, verb); ok && (r == "" || unicode.IsUpper(rune(r[0]))) {
			res = r
			break
		}
	}
	var noun string
	if res == "" {
		noun = strings.ReplaceAll(singular(pkgName), "_", " ")
	} else {
		noun = words(res)
	}
	return article(noun) + " " + noun + "'s fields"
}

// singular returns the singular of a plural package name (credentials:
// credential, policies: policy); other names as they are.
func singular(s string) string {
	switch {
	case strings.HasSuffix(s, "ies"):
		return strings.TrimSuffix(s, "ies") + "y"
	case strings.HasSuffix(s, "s") && !strings.HasSuffix(s, "ss"):
		return strings.TrimSuffix(s, "s")
	}
	return s
}

// words writes a Go name as the words it is made of, in lower case but
// initialisms: HTTPSRoute is "HTTPS route", InvalidArgument "invalid
// argument".
func words(name string) string {
	rs := []rune(name)
	var out []string
	start := 0
	for i := 1; i <= len(rs); i++ {
		if i < len(rs) && !(unicode.IsUpper(rs[i]) && (!unicode.IsUpper(rs[i-1]) || i+1 < len(rs) && unicode.IsLower(rs[i+1]))) {
			continue
		}
		word := string(rs[start:i])
		if strings.ToUpper(word) != word || len(word) == 1 {
			word = strings.ToLower(word)
		}
		out = append(out, word)
		start = i
	}
	return strings.Join(out, " ")
}

// article returns "a" or "an" for a noun phrase: "an HTTPS edge", "a TLS
// edge", "an event destination", "a user".
func article(noun string) string {
	first, _, _ := strings.Cut(noun, " ")
	if first == "" {
		return "a"
	}
	if len(first) > 1 && strings.ToUpper(first) == first {
		if strings.ContainsRune("AEFHILMNORSX", rune(first[0])) {
			return "an"
		}
		return "a"
	}
	if strings.ContainsRune("aeio", rune(first[0])) {
		return "an"
	}
	return "a"
}

// lead writes the start of the doc comment of name, which Go begins with
// the name itself, as the wire's reader reads it: a type's "TLSEdge is a
// TLS edge" as "A TLS edge" (and "OIDCParams replace" as "These
// parameters replace"), a method's "CreateTLSEdge creates" as "Creates".
// A field's name is translated as any other.
func lead(text, name string, kind declKind) string {
	rest, ok := strings.CutPrefix(text, name+" ")
	if !ok || kind != declType && kind != declFunc {
		return text
	}
	for _, verb := range []string{"is ", "are "} {
		if r, ok := strings.CutPrefix(rest, verb); ok {
			return upperFirst(r)
		}
	}
	switch {
	case kind == declFunc:
		return upperFirst(rest)
	case strings.HasSuffix(name, "Params"):
		return "These parameters " + rest // OIDCParams replace an OIDC module
	}
	return text
}

// sentenceStart reports whether a word after before starts a sentence.
func sentenceStart(before string) bool {
	before = strings.TrimRightFunc(before, unicode.IsSpace)
	return before == "" || strings.ContainsAny(before[len(before)-1:], ".!?")
}

func upperFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

func isLower(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsLower(r)
}
