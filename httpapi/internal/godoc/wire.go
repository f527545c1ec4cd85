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
)

// pkg is one parsed package of the module.
type pkg struct {
	importPath string
	name       string // the last element of importPath ("edgeplane" for the root)
	root       bool
	files      []*ast.File // in the order of their names
}

// parse parses the packages of the module rooted at root that Collect
// reads: not test files, not the cmd, examples and internal trees, not
// another module's.
func parse(root string) ([]*pkg, error) {
	var out []*pkg
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if path != root && (skipDirs[d.Name()] || d.Name() == "internal" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if path != root {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
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

// wire says how Go names read on the wire, by package name: its exported
// constants with a literal value (as that value) and the fields of its
// structs with a json tag (as their JSON names).
type wire struct {
	consts map[string]map[string]string // package name -> constant -> value
	fields map[string]map[string]string // package name -> Go field name -> JSON name ("" when two structs disagree)
}

func newWire(pkgs []*pkg) *wire {
	w := &wire{consts: map[string]map[string]string{}, fields: map[string]map[string]string{}}
	// Constants defined as another constant (edges.MaxIPPolicies =
	// ipaccess.MaxIPPolicies) take its value once every package is read.
	type alias struct{ pkg, name, ofPkg, of string }
	var aliases []alias
	for _, p := range pkgs {
		if w.consts[p.name] == nil {
			w.consts[p.name], w.fields[p.name] = map[string]string{}, map[string]string{}
		}
		consts, fields := w.consts[p.name], w.fields[p.name]
		for _, f := range p.files {
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok {
					continue
				}
				for _, spec := range gd.Specs {
					switch spec := spec.(type) {
					case *ast.ValueSpec:
						if gd.Tok != token.CONST {
							continue
						}
						for i, name := range spec.Names {
							if i < len(spec.Values) && name.IsExported() {
								if v, ok := literal(spec.Values[i], spec.Type); ok {
									consts[name.Name] = v
								} else if sel, ok := spec.Values[i].(*ast.SelectorExpr); ok && spec.Type == nil {
									if x, ok := sel.X.(*ast.Ident); ok {
										aliases = append(aliases, alias{p.name, name.Name, x.Name, sel.Sel.Name})
									}
								}
							}
						}
					case *ast.TypeSpec:
						if st, ok := spec.Type.(*ast.StructType); ok {
							addFields(fields, st)
						}
					}
				}
			}
		}
	}
	for _, a := range aliases {
		if v, ok := w.consts[a.ofPkg][a.of]; ok {
			w.consts[a.pkg][a.name] = v
		}
	}
	return w
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
// when untyped): a string's text, an untyped or plain number's digits
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
		return v, err == nil && v != ""
	case token.INT, token.FLOAT:
		if id, named := typ.(*ast.Ident); typ != nil && (!named || !plainNumbers[id.Name]) {
			return "", false
		}
		return strings.ReplaceAll(lit.Value, "_", ""), true
	}
	return "", false
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

// goName matches a Go name a comment mentions, qualified by a package
// name or not: an exported identifier not preceded by a word character,
// a dot or a bracket (as in acl[2] or x.Y).
var goName = regexp.MustCompile(`(^|[^\w.\]])((?:[a-z]\w*\.)?[A-Z]\w*)`)

// translate writes the Go names of text in the wire's language, for a
// comment of package p: a field of p's structs as its JSON name, a
// constant (of p, or qualified by its package's name) as its value;
// other names as they are.
func (w *wire) translate(p *pkg, text string) string {
	return goName.ReplaceAllStringFunc(text, func(m string) string {
		sub := goName.FindStringSubmatch(m)
		lead, name := sub[1], sub[2]
		pkgName, short := p.name, name
		if i := strings.IndexByte(name, '.'); i >= 0 {
			pkgName, short = name[:i], name[i+1:]
		}
		// A field of the package before a constant of the same name: a
		// field's doc starts with its name.
		if json := w.fields[pkgName][short]; json != "" && pkgName == p.name && name == short {
			return lead + json
		}
		if v, ok := w.consts[pkgName][short]; ok {
			return lead + v
		}
		return m
	})
}
