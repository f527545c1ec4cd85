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
// Test files and the cmd, examples and internal trees are not read.
func Collect(root string) (map[string]string, error) {
	docs := make(map[string]string)
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
		return collectDir(docs, path, importPath, rel == ".")
	})
	return docs, err
}

func collectDir(docs map[string]string, dir, importPath string, root bool) error {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.ParseComments)
	if err != nil {
		return err
	}
	for _, pkg := range pkgs {
		files := make([]string, 0, len(pkg.Files))
		for name := range pkg.Files {
			files = append(files, name)
		}
		sort.Strings(files)
		for _, name := range files {
			for _, decl := range pkg.Files[name].Decls {
				switch decl := decl.(type) {
				case *ast.GenDecl:
					collectTypes(docs, importPath, decl)
				case *ast.FuncDecl:
					if root && decl.Recv != nil && decl.Name.IsExported() && receiver(decl) == "Service" {
						docs[importPath+".Service."+decl.Name.Name] = text(decl.Doc)
					}
				}
			}
		}
	}
	return nil
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

func collectTypes(docs map[string]string, importPath string, decl *ast.GenDecl) {
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
		key := importPath + "." + ts.Name.Name
		docs[key] = text(doc)
		for _, f := range st.Fields.List {
			fdoc := f.Doc
			if fdoc == nil {
				fdoc = f.Comment
			}
			for _, name := range f.Names {
				docs[key+"."+name.Name] = text(fdoc)
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

// text renders a doc comment as plain text: doc links lose their
// brackets, paragraphs are separated by a blank line and not wrapped.
func text(cg *ast.CommentGroup) string {
	if cg == nil {
		return ""
	}
	var p comment.Parser
	d := p.Parse(cg.Text())
	pr := comment.Printer{TextWidth: -1}
	return strings.TrimSpace(docLink.ReplaceAllString(string(pr.Text(d)), "$1$2"))
}

// docLink matches a doc link ([Name], [pkg.Name], [*pkg.Name]) not
// preceded by a word character (as in acl[2]).
var docLink = regexp.MustCompile(`(^|[^\w\]])\[(\*?[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\]`)

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
