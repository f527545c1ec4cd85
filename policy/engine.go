package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/interpreter"
	"github.com/edgeplane/edgeplane/policy/limits"
)

// Target is the kind of traffic a policy is compiled for.
type Target uint8

const (
	// TargetHTTP is for HTTP traffic (HTTPS routes): rules see req.*,
	// res.* (outbound) and conn.*.
	TargetHTTP Target = iota
	// TargetConnection is for TLS and TCP edges: the inbound rules run once
	// per new connection and see conn.* and time.now only.
	TargetConnection
)

// String returns "http" or "connection".
func (t Target) String() string {
	if t == TargetConnection {
		return "connection"
	}
	return "http"
}

// Phase is when rules run.
type Phase uint8

const (
	// Inbound rules run before the upstream: on an HTTP request, or on a new
	// connection.
	Inbound Phase = iota
	// Outbound rules run on an HTTP response.
	Outbound
)

// String returns "inbound" or "outbound".
func (p Phase) String() string {
	if p == Outbound {
		return "outbound"
	}
	return "inbound"
}

// Options configures an [Engine]. The zero value gives the built-in actions,
// a [log/slog] sink and the system clock.
type Options struct {
	// Actions are extra action types. A type whose name is already
	// registered (built-in or earlier in the list) makes NewEngine fail.
	Actions []ActionType
	// Sink receives log entries and runtime errors; nil means
	// NewSlogSink(nil).
	Sink Sink
	// Clock gives the evaluation time when a [Request] carries none
	// (Request.Time is zero); nil means time.Now.
	Clock func() time.Time
	// RateLimitMaxKeys bounds the number of buckets each rate limiter
	// tracks; 0 leaves the ratelimit package's default.
	RateLimitMaxKeys int
	// HTTPClient fetches the key sets of jwt-validation actions; nil
	// means a client with a 10-second timeout. Documents name the URLs it
	// fetches: a host compiling documents written by untrusted users
	// should give a client whose transport refuses internal addresses.
	// The Engine keeps one key set per distinct URL it has compiled.
	HTTPClient *http.Client
	// Observer, when set, is told of every rule that applies, every
	// action that runs and every evaluation's verdict and duration (for
	// metrics); nil costs nothing.
	Observer Observer
}

// IPChecker decides whether a client address may pass. Implementations must
// be safe for concurrent use.
type IPChecker interface {
	AllowedIP(netip.Addr) bool
}

// IPPolicyResolver turns the IP policy IDs named by a restrict-ips action
// into an [IPChecker]. It is called once per action at compile time; the
// checker it returns is consulted on every evaluation, so the host decides
// how fresh the policies are (a checker may read live data). An error
// refuses the policy, with the error's message as the reason.
type IPPolicyResolver func(ids []string) (IPChecker, error)

// CompileOptions says what a document is compiled for.
type CompileOptions struct {
	// Target selects HTTP (the zero value) or TLS/TCP connection traffic.
	Target Target
	// Scope names the owner of the policy, for example an edge or route
	// ID. Rate limiters are shared between compilations only within one
	// scope, so two edges with identical rate-limit configs count
	// separately.
	Scope string
	// IPPolicies resolves the ip_policies of restrict-ips actions. Without
	// it, a restrict-ips config that names ip_policies is refused.
	IPPolicies IPPolicyResolver
}

// Engine compiles traffic policy documents into [Policy] values. It owns
// the CEL environment, the action registry and a pool of rate limiters
// shared by the policies it compiles, so that recompiling a policy whose
// rate-limit config did not change keeps the limiter and its counts (see
// the package doc, section Rate limiting). An Engine is safe for concurrent
// use; create one per process (or per tenant) and keep it.
type Engine struct {
	env      *cel.Env
	actions  map[string]ActionType
	vars     map[string]*varInfo
	results  []resultDecl
	sink     Sink
	observer Observer

	httpClient *http.Client
	jwksMu     sync.Mutex
	jwks       map[string]*jwksCache // by URL
	clock      func() time.Time
	maxKeys    int
	limiters   limiterPool
	// connActions names the built-in actions a connection policy allows,
	// for needHTTP's message.
	connActions string
	states      sync.Pool

	// tracker is a cost tracker configured with the environment's cost
	// models (the string extensions' among them), which every evaluation
	// state copies (see costTracker).
	tracker cost.Tracker
}

// resultDecl is one action result variable.
type resultDecl struct {
	action string // action type, e.g. "rate-limit"
	field  string // e.g. "error.code"
	name   string // full variable name
	kind   valueKind
	slot   int
	avail  avail
}

// NewEngine returns an Engine with the built-in actions and o.Actions.
func NewEngine(o Options) (*Engine, error) {
	e := &Engine{
		actions:    map[string]ActionType{},
		vars:       map[string]*varInfo{},
		sink:       o.Sink,
		observer:   o.Observer,
		httpClient: o.HTTPClient,
		clock:      o.Clock,
		maxKeys:    o.RateLimitMaxKeys,
	}
	if e.sink == nil {
		e.sink = NewSlogSink(nil)
	}
	if e.clock == nil {
		e.clock = time.Now
	}
	if e.httpClient == nil {
		e.httpClient = &http.Client{Timeout: 10 * time.Second}
	}
	e.limiters.init()
	builtins := builtinTypes()
	e.connActions = connectionActions(builtins)
	types := make([]ActionType, 0, len(builtins)+len(o.Actions))
	for _, t := range builtins {
		types = append(types, t)
	}
	types = append(types, o.Actions...)
	for _, t := range types {
		if t == nil {
			return nil, fmt.Errorf("policy: nil action type")
		}
		name := t.Type()
		if name == "" || strings.ContainsAny(name, " \t\r\n.") {
			return nil, fmt.Errorf("policy: invalid action type name %q", name)
		}
		if _, dup := e.actions[name]; dup {
			return nil, fmt.Errorf("policy: action type %q registered twice", name)
		}
		e.actions[name] = t
		rd, ok := t.(ResultDeclarer)
		if !ok {
			continue
		}
		for _, f := range rd.ResultFields() {
			if !validResultField(f.Name) {
				return nil, fmt.Errorf("policy: action type %q: invalid result field name %q", name, f.Name)
			}
			d := resultDecl{
				action: name,
				field:  f.Name,
				name:   ResultVariable(name, f.Name),
				slot:   len(e.results),
				avail:  availAll,
			}
			if f.HTTPOnly {
				d.avail = availHTTP
			}
			switch f.Type {
			case ResultString:
				d.kind = kString
			case ResultBool:
				d.kind = kBool
			case ResultInt:
				d.kind = kInt
			default:
				return nil, fmt.Errorf("policy: action type %q: result field %q has an unknown type", name, f.Name)
			}
			e.results = append(e.results, d)
		}
	}
	for i := range staticVars {
		e.vars[staticVars[i].name] = &staticVars[i]
	}
	for _, d := range e.results {
		if _, dup := e.vars[d.name]; dup {
			return nil, fmt.Errorf("policy: result variable %s declared twice", d.name)
		}
		e.vars[d.name] = &varInfo{name: d.name, id: resultBase + varID(d.slot), kind: d.kind, avail: d.avail}
	}
	env, err := e.newEnv()
	if err != nil {
		return nil, fmt.Errorf("policy: building the CEL environment: %w", err)
	}
	e.env = env
	if e.tracker, err = envTracker(env); err != nil {
		return nil, fmt.Errorf("policy: building the cost tracker: %w", err)
	}
	e.states.New = func() any { return newEvalState(e) }
	return e, nil
}

// ResultVariable returns the name of an action's result variable:
// actions.service.<type with '-' as '_'>.<field>, for example
// actions.service.rate_limit.limited.
func ResultVariable(actionType, field string) string {
	return "actions.service." + strings.ReplaceAll(actionType, "-", "_") + "." + field
}

func validResultField(s string) bool {
	if s == "" {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if part == "" {
			return false
		}
		for i, r := range part {
			if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
				return false
			}
		}
	}
	return true
}

// ActionTypes returns the names of the registered action types, sorted.
func (e *Engine) ActionTypes() []string {
	names := make([]string, 0, len(e.actions))
	for n := range e.actions {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (e *Engine) newEnv() (*cel.Env, error) {
	listStr := cel.ListType(cel.StringType)
	str := []*cel.Type{cel.StringType}
	opts := []cel.EnvOption{
		cel.ParserRecursionLimit(limits.MaxRecursionDepth),
		cel.ParserExpressionSizeLimit(limits.MaxExpressionLength),
		cel.ExpressionNodeLimit(limits.MaxExpressionNodes),
		cel.ASTValidators(
			cel.ValidateDurationLiterals(),
			cel.ValidateTimestampLiterals(),
			cel.ValidateComprehensionNestingLimit(limits.MaxComprehensionNesting),
		),
		ext.Strings(),
		ext.Encoders(),
		ext.Lists(ext.ListsMaxRangeSize(limits.MaxListRange)),
		ext.Sets(),
		ext.Math(),
		ext.Network(),
		cel.OptionalTypes(),
		cel.Function(fnGetReqHeader, cel.Overload("getReqHeader_string", str, listStr, cel.LateFunctionBinding())),
		cel.Function(fnGetResHeader, cel.Overload("getResHeader_string", str, listStr, cel.LateFunctionBinding())),
		cel.Function(fnHasReqHeader, cel.Overload("hasReqHeader_string", str, cel.BoolType, cel.LateFunctionBinding())),
		cel.Function(fnHasResHeader, cel.Overload("hasResHeader_string", str, cel.BoolType, cel.LateFunctionBinding())),
		cel.Function(fnGetQueryParam, cel.Overload("getQueryParam_string", str, listStr, cel.LateFunctionBinding())),
		cel.Function(fnHasQueryParam, cel.Overload("hasQueryParam_string", str, cel.BoolType, cel.LateFunctionBinding())),
		cel.Function(fnInCidrRange, cel.Overload("inCidrRange_string_string",
			[]*cel.Type{cel.StringType, cel.StringType}, cel.BoolType, cel.BinaryBinding(celInCidrRange))),
		cel.Function(fnInCidrRanges, cel.Overload("inCidrRanges_string_list",
			[]*cel.Type{cel.StringType, listStr}, cel.BoolType, cel.BinaryBinding(celInCidrRanges))),
		cel.Function(fnGetReqCookie, cel.Overload(ovGetReqCookie, str, listStr, cel.LateFunctionBinding())),
		cel.Function(fnHasReqCookie, cel.Overload(ovHasReqCookie, str, cel.BoolType, cel.LateFunctionBinding())),
		cel.Function(fnParseURL, cel.Overload(ovParseURL, str, cel.MapType(cel.StringType, cel.StringType), cel.UnaryBinding(celParseURL))),
		cel.Function(fnSHA256, cel.Overload(ovSHA256, str, cel.StringType, cel.UnaryBinding(celHash(ovSHA256)))),
		cel.Function(fnSHA1, cel.Overload(ovSHA1, str, cel.StringType, cel.UnaryBinding(celHash(ovSHA1)))),
		cel.Function(fnMD5, cel.Overload(ovMD5, str, cel.StringType, cel.UnaryBinding(celHash(ovMD5)))),
	}
	for i := range staticVars {
		opts = append(opts, cel.Variable(staticVars[i].name, celTypeOf(staticVars[i].kind)))
	}
	for _, d := range e.results {
		opts = append(opts, cel.Variable(d.name, celTypeOf(d.kind)))
	}
	return cel.NewEnv(opts...)
}

// envTracker returns a cost tracker configured as cel-go configures the
// tracker of a program of env with cost tracking: with env's cost models,
// which cel-go keeps to itself. It is the tracker of one evaluation of a
// constant, which costs nothing.
func envTracker(env *cel.Env) (cost.Tracker, error) {
	a, iss := env.Compile("true")
	if iss.Err() != nil {
		return cost.Tracker{}, iss.Err()
	}
	p, err := env.Program(a, cel.CostTracking(nil))
	if err != nil {
		return cost.Tracker{}, err
	}
	frame, err := interpreter.NewExecutionFrame(interpreter.EmptyActivation())
	if err != nil {
		return cost.Tracker{}, err
	}
	defer frame.Close()
	if _, _, err := p.Eval(frame); err != nil {
		return cost.Tracker{}, err
	}
	t := frame.CostTracker()
	if t == nil || t.ActualCost() != 0 {
		return cost.Tracker{}, errors.New("cel-go did not provide a cost tracker")
	}
	return *t, nil
}

// CompileJSON parses data with [Parse] and compiles it with [Engine.Compile].
func (e *Engine) CompileJSON(data []byte, o CompileOptions) (*Policy, error) {
	doc, err := Parse(data)
	if err != nil {
		return nil, err
	}
	return e.Compile(doc, o)
}

// compactJSON returns the document's compact form.
func compactJSON(d *Document) []byte {
	b, err := d.MarshalJSON()
	if err != nil {
		// Only invalid RawMessage configs can fail, and Compile has
		// checked those already.
		b, _ = json.Marshal(err.Error())
	}
	return b
}
