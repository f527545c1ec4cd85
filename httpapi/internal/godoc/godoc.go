// Package godoc collects the doc comments of the module's wire types and
// of the Service's methods, for the OpenAPI document of package httpapi:
// the descriptions of its schemas, fields and operations are the Go doc
// comments, so they are written once.
//
// [Generate] runs at go generate time (go run ./internal/godoc/gen, from
// the httpapi directory) and writes a Go file of package httpapi holding a
// map from names to comment text; httpapi's tests fail when that file is
// not what Generate makes of the current source.
package godoc

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/doc/comment"
	"go/format"
	"go/token"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Module is the import path of the module's root directory.
const Module = "github.com/edgeplane/edgeplane"

// skipDirs are the directories whose packages hold no wire types.
var skipDirs = map[string]bool{"cmd": true, "examples": true, "testdata": true, ".git": true, ".ci": true}

// Collect walks the module rooted at root and returns the doc comments,
// as plain text, of
//
//   - every struct type with at least one json-tagged field (or none at
//     all: an empty request body), keyed
//     "<import path>.<Type>", and of each of its fields, keyed
//     "<import path>.<Type>.<Field>";
//   - every exported method of the root package's Service, keyed
//     "<module>.Service.<Method>".
//
// The text speaks the wire's language, not Go's ([wire.render]): a
// constant with a literal value is written as that value ("allow", 100),
// a field of the package's wire structs as its JSON name (created_at), a
// Service method as Service.<Method> (which package httpapi writes as
// the operation that calls it), a type as its words ("HTTPS route"); a
// comment does not begin with the name it documents ("A TLS edge ...",
// "Creates a TLS edge ..."), and a reference to Go documentation ("(see
// ParseHostport)") is left out. Test files and the cmd, examples and
// internal trees are not read.
func Collect(root string) (map[string]string, error) {
	pkgs, err := parse(root, true)
	if err != nil {
		return nil, err
	}
	w := newWire(pkgs)
	docs := make(map[string]string)
	for _, p := range pkgs {
		for _, f := range p.files {
			for _, decl := range f.Decls {
				switch decl := decl.(type) {
				case *ast.GenDecl:
					collectTypes(docs, p, w, decl)
				case *ast.FuncDecl:
					if p.root && decl.Recv != nil && decl.Name.IsExported() && receiver(decl) == "Service" {
						docs[p.importPath+".Service."+decl.Name.Name] = w.text(p, decl.Doc, decl.Name.Name, declFunc)
					}
				}
			}
		}
	}
	return docs, nil
}

// receiver returns the name of the type of a method's receiver.
func receiver(fn *ast.FuncDecl) string {
	t := fn.Recv.List[0].Type
	if star, ok := t.(*ast.StarExpr); ok {
		t = star.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

func collectTypes(docs map[string]string, p *pkg, w *wire, decl *ast.GenDecl) {
	if decl.Tok != token.TYPE {
		return
	}
	for _, spec := range decl.Specs {
		ts := spec.(*ast.TypeSpec)
		st, ok := ts.Type.(*ast.StructType)
		if !ok || (!hasJSONTag(st) && len(st.Fields.List) > 0) {
			continue
		}
		doc := ts.Doc
		if doc == nil && len(decl.Specs) == 1 {
			doc = decl.Doc
		}
		key := p.importPath + "." + ts.Name.Name
		docs[key] = w.text(p, doc, ts.Name.Name, declType)
		for _, f := range st.Fields.List {
			fdoc := f.Doc
			if fdoc == nil {
				fdoc = f.Comment
			}
			for _, name := range f.Names {
				docs[key+"."+name.Name] = w.text(p, fdoc, name.Name, declNone)
			}
		}
	}
}

func hasJSONTag(st *ast.StructType) bool {
	for _, f := range st.Fields.List {
		if f.Tag == nil {
			continue
		}
		tag, err := strconv.Unquote(f.Tag.Value)
		if err == nil && reflect.StructTag(tag).Get("json") != "" {
			return true
		}
	}
	return false
}

// text renders the doc comment of name (a declaration of package p, of
// kind kind; declNone for a field) as plain text in the wire's language:
// doc links lose their brackets, paragraphs are separated by a blank
// line and not wrapped, the name it begins with is left out ([lead]), so
// are references to Go documentation ([wire.dropRefs]), and Go names are
// written as the wire shows them ([wire.translate]).
func (w *wire) text(p *pkg, cg *ast.CommentGroup, name string, kind declKind) string {
	if cg == nil {
		return ""
	}
	var cp comment.Parser
	d := cp.Parse(cg.Text())
	pr := comment.Printer{TextWidth: -1}
	text := lead(docLink.ReplaceAllString(string(pr.Text(d)), "$1$2"), name, kind)
	return strings.TrimSpace(w.translate(p, w.dropRefs(p, text)))
}

// docLink matches a doc link ([Name], [pkg.Name], [*pkg.Name]) not
// preceded by a word character (as in acl[2]).
var docLink = regexp.MustCompile(`(^|[^\w\]])\[(\*?[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\]`)

// Names returns the exported identifiers the module rooted at root
// declares, in any package but its tests and testdata: package-level
// names, methods, struct fields and interface methods. They are the Go
// names no description of the OpenAPI document may show.
func Names(root string) (map[string]bool, error) {
	pkgs, err := parse(root, false)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	add := func(id *ast.Ident) {
		if id != nil && id.IsExported() {
			names[id.Name] = true
		}
	}
	for _, p := range pkgs {
		for _, f := range p.files {
			for _, decl := range f.Decls {
				switch decl := decl.(type) {
				case *ast.FuncDecl:
					add(decl.Name)
				case *ast.GenDecl:
					for _, spec := range decl.Specs {
						switch spec := spec.(type) {
						case *ast.TypeSpec:
							add(spec.Name)
						case *ast.ValueSpec:
							for _, id := range spec.Names {
								add(id)
							}
						}
					}
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				var fields *ast.FieldList
				switch n := n.(type) {
				case *ast.StructType:
					fields = n.Fields
				case *ast.InterfaceType:
					fields = n.Methods
				}
				if fields != nil {
					for _, field := range fields.List {
						for _, id := range field.Names {
							add(id)
						}
					}
				}
				return true
			})
		}
	}
	return names, nil
}

// Generate returns the Go source of package httpapi declaring goDocs, the
// map [Collect] returns for the module rooted at root.
func Generate(root string) ([]byte, error) {
	docs, err := Collect(root)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(docs))
	for k := range docs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	b.WriteString("// Code generated by go run ./internal/godoc/gen; DO NOT EDIT.\n\n")
	b.WriteString("package httpapi\n\n")
	b.WriteString("// goDocs holds the doc comments of the wire types, their fields and the\n")
	b.WriteString("// Service's methods, as plain text: the descriptions of the OpenAPI\n")
	b.WriteString("// document. Regenerate it with go generate after changing a comment.\n")
	b.WriteString("var goDocs = map[string]string{\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "\t%s: %s,\n", strconv.Quote(k), strconv.Quote(docs[k]))
	}
	b.WriteString("}\n")
	return format.Source(b.Bytes())
}
