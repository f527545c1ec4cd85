package filter

import (
	"container/list"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/checker"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/interpreter"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/policy/limits"
)

const (
	// MaxBytes is the longest filter expression, in bytes.
	MaxBytes = 4096

	// MaxCached is how many compiled filters a [Compiler] keeps.
	MaxCached = 256

	// EstimatedStringBytes is the length the compile-time cost estimate
	// assumes for every string of a resource (the longest the API stores,
	// a certificate chain, is 64 KiB; a traffic policy may be longer and
	// is then bounded by the evaluation budget).
	EstimatedStringBytes = 64 << 10

	// EstimatedEntries is the number of entries the compile-time cost
	// estimate assumes for every list and map of a resource.
	EstimatedEntries = 128
)

// Field is the name violations give the filter: the query parameter.
const Field = "filter"

// Filter is a compiled filter expression for resources of type T. It is
// immutable and safe for concurrent use.
type Filter[T any] struct {
	expr string
	*program
}

// program is what compiling an expression yields, cached by Compiler.
type program struct {
	prg   cel.Program
	reads map[string]bool // the fields of obj the expression selects
	whole bool            // obj is used otherwise than by selecting a field
}

// Reads reports whether the filter may read the field of obj with the JSON
// name field: it selects it (obj.field), or uses obj otherwise than by
// selecting a field. A caller that computes a field at some cost may fill
// it only for the resources that match a filter that does not read it.
func (f *Filter[T]) Reads(field string) bool { return f.whole || f.reads[field] }

// String returns the expression the filter was compiled from.
func (f *Filter[T]) String() string { return f.expr }

// Match reports whether v matches the filter. It is false when the
// evaluation fails (see the package doc, # Evaluation).
func (f *Filter[T]) Match(v *T) bool {
	ok, _ := f.Eval(v)
	return ok
}

// Eval is [Filter.Match] that also returns what the evaluation cost, in
// CEL's cost units: at most [limits.MaxEvaluationCost], which an
// evaluation stopped by that budget counts in full. A caller that
// evaluates many resources per request can bound their total.
func (f *Filter[T]) Eval(v *T) (match bool, cost uint64) {
	out, det, err := f.prg.Eval(objActivation{v})
	cost = limits.MaxEvaluationCost
	var cancelled interpreter.EvalCancelledError
	if c := det.ActualCost(); c != nil && !errors.As(err, &cancelled) {
		cost = min(*c, cost)
	}
	if err != nil {
		return false, cost
	}
	b, ok := out.(types.Bool)
	return ok && bool(b), cost
}

// objActivation binds obj to one resource.
type objActivation struct{ obj any }

func (a objActivation) ResolveName(name string) (any, bool) {
	if name == "obj" {
		return a.obj, true
	}
	return nil, false
}

func (objActivation) Parent() interpreter.Activation { return nil }

// Compiler compiles filters and keeps the most recently used ones (at most
// [MaxCached]) and one CEL environment per resource type. The zero value is
// ready to use; a nil *Compiler compiles without caching. It is safe for
// concurrent use.
type Compiler struct {
	mu    sync.Mutex
	envs  map[reflect.Type]*cel.Env
	lru   list.List // of *cached, most recent at the front
	index map[cacheKey]*list.Element
}

type cacheKey struct {
	typ  reflect.Type
	expr string
}

type cached struct {
	key cacheKey
	prg *program
}

// Compile compiles expr into a filter of resources of type T, a struct
// type. A malformed, ill-typed, too long or too costly expression is an
// InvalidArgument [apierr.Error] whose violations name [Field] (see the
// package doc, # Errors).
func Compile[T any](c *Compiler, expr string) (*Filter[T], error) {
	typ := reflect.TypeFor[T]()
	if err := checkText(expr); err != nil {
		return nil, err
	}
	k := cacheKey{typ, expr}
	if prg, ok := c.lookup(k); ok {
		return &Filter[T]{expr: expr, program: prg}, nil
	}
	env, err := c.env(typ)
	if err != nil {
		return nil, err
	}
	prg, err := compile(env, expr)
	if err != nil {
		return nil, err
	}
	c.store(k, prg)
	return &Filter[T]{expr: expr, program: prg}, nil
}

func invalid(format string, args ...any) error {
	var vs apierr.Violations
	vs.Add(Field, format, args...)
	return vs.Err()
}

// checkText applies the checks that need no parsing.
func checkText(expr string) error {
	switch {
	case len(expr) > MaxBytes:
		return invalid("must be at most %d bytes, got %d", MaxBytes, len(expr))
	case !utf8.ValidString(expr):
		return invalid("must be valid UTF-8")
	case strings.TrimSpace(expr) == "":
		return invalid("must be a CEL expression over obj, got an empty one")
	}
	return nil
}

func (c *Compiler) lookup(k cacheKey) (*program, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.index[k]
	if !ok {
		return nil, false
	}
	c.lru.MoveToFront(e)
	return e.Value.(*cached).prg, true
}

func (c *Compiler) store(k cacheKey, prg *program) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.index == nil {
		c.index = make(map[cacheKey]*list.Element)
	}
	if e, ok := c.index[k]; ok {
		c.lru.MoveToFront(e)
		return
	}
	c.index[k] = c.lru.PushFront(&cached{key: k, prg: prg})
	for c.lru.Len() > MaxCached {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.index, old.Value.(*cached).key)
	}
}

// cachedLen returns the number of cached filters (for tests).
func (c *Compiler) cachedLen() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// env returns the CEL environment of resources of type typ.
func (c *Compiler) env(typ reflect.Type) (*cel.Env, error) {
	if c == nil {
		return newEnv(typ)
	}
	c.mu.Lock()
	env, ok := c.envs[typ]
	c.mu.Unlock()
	if ok {
		return env, nil
	}
	env, err := newEnv(typ)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.envs == nil {
		c.envs = make(map[reflect.Type]*cel.Env)
	}
	if prev, ok := c.envs[typ]; ok {
		return prev, nil
	}
	c.envs[typ] = env
	return env, nil
}

// errNotStruct reports a programming error: a resource type that is not a
// struct.
var errNotStruct = errors.New("filter: the resource type must be a struct")

// newEnv builds the environment whose obj is a typ, with fields named by
// their json tags and the policy engine's parse limits.
func newEnv(typ reflect.Type) (*cel.Env, error) {
	if typ.Kind() != reflect.Struct {
		return nil, apierr.Wrap(apierr.Internal, errNotStruct, "internal error")
	}
	base, err := cel.NewEnv(
		ext.NativeTypes(typ, ext.ParseStructField(celName)),
		cel.ParserRecursionLimit(limits.MaxRecursionDepth),
		cel.ParserExpressionSizeLimit(MaxBytes),
		cel.ExpressionNodeLimit(limits.MaxExpressionNodes),
		cel.ASTValidators(
			cel.ValidateDurationLiterals(),
			cel.ValidateTimestampLiterals(),
			cel.ValidateRegexLiterals(),
			cel.ValidateComprehensionNestingLimit(limits.MaxComprehensionNesting),
		),
	)
	if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "internal error")
	}
	nullable := map[string]map[string]nullField{}
	nullableFields(typ, nullable, map[reflect.Type]bool{})
	env, err := base.Extend(
		cel.CustomTypeProvider(nullableProvider{base.CELTypeProvider(), nullable}),
		cel.Variable("obj", cel.ObjectType(typeName(typ))),
	)
	if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "internal error")
	}
	return env, nil
}

// typeName is the CEL name cel-go's native types give a Go struct type:
// the last element of its package path, a dot and its name.
func typeName(t reflect.Type) string {
	pkg := t.PkgPath()
	if i := strings.LastIndexByte(pkg, '/'); i >= 0 {
		pkg = pkg[i+1:]
	}
	return pkg + "." + t.Name()
}

// jsonName returns the name a filter gives a field: its JSON name, or ""
// when the filter does not see it. Only fields with a json tag are seen
// (every field the API shows has one), so that a type the Service keeps
// beside the API's model (the model embedded with a sealed key or a flag
// the API does not show) exposes nothing more than the model. An
// untagged embedded struct is seen, as encoding/json sees it, through the
// fields it promotes.
func jsonName(f reflect.StructField) string {
	tag, ok := f.Tag.Lookup("json")
	if !ok {
		if f.Anonymous {
			return f.Name
		}
		return ""
	}
	name, _, _ := strings.Cut(tag, ",")
	switch name {
	case "-":
		return ""
	case "":
		return f.Name
	}
	return name
}

// celName is jsonName for cel-go's native types, which skip a field named
// "-".
func celName(f reflect.StructField) string {
	if name := jsonName(f); name != "" {
		return name
	}
	return "-"
}

// nullField is a field the API shows as null when it is nil: a pointer.
type nullField struct {
	typ   *types.Type // the nullable CEL type of a pointer to a scalar; nil to keep the native type
	index []int       // of the field in its struct
}

// nullableFields records, for every struct type reachable from t, the
// fields that are pointers. cel-go's native types read a nil pointer as
// the zero value of what it points to; the API shows null, and so must a
// filter. A pointer to a scalar is also typed as the nullable scalar, so
// that obj.token == null type-checks (CEL's objects and timestamps are
// nullable already).
func nullableFields(t reflect.Type, out map[string]map[string]nullField, seen map[reflect.Type]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		if t.Kind() == reflect.Map {
			nullableFields(t.Key(), out, seen)
		}
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return
	}
	seen[t] = true
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() || f.Anonymous {
			continue
		}
		name := jsonName(f)
		if name == "" {
			continue
		}
		if f.Type.Kind() == reflect.Pointer {
			nf := nullField{index: f.Index}
			if nt := scalarType(f.Type.Elem()); nt != nil {
				nf.typ = types.NewNullableType(nt)
			}
			if out[typeName(t)] == nil {
				out[typeName(t)] = map[string]nullField{}
			}
			out[typeName(t)][name] = nf
		}
		nullableFields(f.Type, out, seen)
	}
}

func scalarType(t reflect.Type) *types.Type {
	switch t.Kind() {
	case reflect.String:
		return types.StringType
	case reflect.Bool:
		return types.BoolType
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if t == reflect.TypeFor[time.Duration]() {
			return nil // a duration, nullable in CEL already
		}
		return types.IntType
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return types.UintType
	case reflect.Float32, reflect.Float64:
		return types.DoubleType
	}
	return nil
}

// nullableProvider is the native type provider with the fields found by
// nullableFields read as null when nil, and typed as nullable.
type nullableProvider struct {
	types.Provider
	nullable map[string]map[string]nullField
}

func (p nullableProvider) FindStructFieldType(structType, fieldName string) (*types.FieldType, bool) {
	ft, ok := p.Provider.FindStructFieldType(structType, fieldName)
	if !ok {
		return ft, ok
	}
	nf, ok := p.nullable[structType][fieldName]
	if !ok {
		return ft, true
	}
	cp := *ft
	if nf.typ != nil {
		cp.Type = nf.typ
	}
	get := ft.GetFrom
	cp.GetFrom = func(obj any) (any, error) {
		if isNilField(obj, nf.index) {
			return types.NullValue, nil
		}
		return get(obj)
	}
	return &cp, true
}

// isNilField reports whether the pointer field at index of the struct obj
// (or *struct, or a CEL value holding either) is nil.
func isNilField(obj any, index []int) bool {
	if v, ok := obj.(ref.Val); ok {
		obj = v.Value()
	}
	rv := reflect.ValueOf(obj)
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return true
		}
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct {
		return false
	}
	f, err := rv.FieldByIndexErr(index)
	return err != nil || f.Kind() == reflect.Pointer && f.IsNil()
}

// compile parses, checks and plans expr in env under the policy engine's
// cost limits.
func compile(env *cel.Env, expr string) (*program, error) {
	a, iss := env.Compile(expr)
	if iss.Err() != nil {
		var vs apierr.Violations
		for _, e := range iss.Errors() {
			vs.Add(Field, "%s", formatLoc(e.Location.Line(), e.Location.Column(), e.Message))
		}
		return nil, vs.Err()
	}
	if t := a.OutputType(); !t.IsExactType(types.BoolType) {
		return nil, invalid("1:1: must be a boolean expression, got one of type %s", checker.FormatCELType(t))
	}
	est, err := env.EstimateCost(a, sizeEstimator{})
	if err != nil {
		return nil, invalid("1:1: its cost cannot be estimated")
	}
	if est.Max > limits.MaxExpressionCost {
		return nil, invalid("1:1: the estimated worst-case cost %s exceeds the limit of %d; nested comprehensions and contains() between two fields are the usual causes",
			fmtCost(est.Max), limits.MaxExpressionCost)
	}
	prg, err := env.Program(a, cel.CostLimit(limits.MaxEvaluationCost))
	if err != nil {
		return nil, invalid("1:1: %s", err.Error())
	}
	out := &program{prg: prg, reads: map[string]bool{}}
	idents, selects := 0, 0
	ast.PreOrderVisit(a.NativeRep().Expr(), ast.NewExprVisitor(func(e ast.Expr) {
		switch e.Kind() {
		case ast.IdentKind:
			if e.AsIdent() == "obj" {
				idents++
			}
		case ast.SelectKind:
			if op := e.AsSelect().Operand(); op.Kind() == ast.IdentKind && op.AsIdent() == "obj" {
				selects++
				out.reads[e.AsSelect().FieldName()] = true
			}
		}
	}))
	out.whole = idents != selects
	return out, nil
}

// formatLoc formats a CEL location (1-based line, 0-based column) and a
// message as "line:column: message" with a 1-based column.
func formatLoc(line, col int, msg string) string {
	if line <= 0 {
		line, col = 1, 0
	}
	return strconv.Itoa(line) + ":" + strconv.Itoa(col+1) + ": " + msg
}

func fmtCost(n uint64) string {
	if n == ^uint64(0) {
		return "(unbounded)"
	}
	return strconv.FormatUint(n, 10)
}

// sizeEstimator gives the cost estimate the sizes of a resource's strings,
// lists and maps (see EstimatedStringBytes and EstimatedEntries).
type sizeEstimator struct{}

func (sizeEstimator) EstimateSize(n cost.AstNode) *cost.SizeEstimate {
	if len(n.Path()) == 0 {
		return nil
	}
	switch n.Type().Kind() {
	case types.StringKind, types.BytesKind, types.StructKind:
		// An object's size bounds the work of comparing it: its strings.
		return &cost.SizeEstimate{Min: 0, Max: EstimatedStringBytes}
	case types.ListKind, types.MapKind:
		return &cost.SizeEstimate{Min: 0, Max: EstimatedEntries}
	}
	return nil
}

func (sizeEstimator) EstimateCallCost(function, overloadID string, target *cost.AstNode, args []cost.AstNode) *cost.CallEstimate {
	return nil
}
