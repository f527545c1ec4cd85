package policy

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/policy/limits"
	"github.com/edgeplane/edgeplane/ratelimit"
)

// Result fields of the rate-limit action (SPEC 2.8).
const (
	rlBucketKey    = "bucket_key"
	rlLimited      = "limited"
	rlErrorCode    = "error.code"
	rlErrorMessage = "error.message"
	// Extensions (issue 19): the limiter's feedback.
	rlLimit     = "limit"
	rlRemaining = "remaining"
	rlReset     = "reset"
)

// Values of the rate-limit config's headers field, an extension of SPEC
// 2.8: which rate-limit response headers the action adds.
const (
	// RateLimitHeadersNone adds none (the default, as when the field is
	// absent or empty).
	RateLimitHeadersNone = "none"
	// RateLimitHeadersIETF adds RateLimit-Policy and RateLimit in the form
	// of draft-ietf-httpapi-ratelimit-headers: RateLimit-Policy:
	// "<name>";q=<capacity>;w=<window seconds> and RateLimit:
	// "<name>";r=<remaining>;t=<reset seconds>.
	RateLimitHeadersIETF = "ietf"
	// RateLimitHeadersX adds X-RateLimit-Limit, X-RateLimit-Remaining and
	// X-RateLimit-Reset (seconds), the form Envoy, Kong and APISIX send.
	RateLimitHeadersX = "x-ratelimit"
)

// ErrCodeBucketKeyTooLong is the value of
// actions.service.rate_limit.error.code when a request's bucket key was
// longer than limits.MaxBucketKeyBytes and was truncated.
const ErrCodeBucketKeyTooLong = "ERR_RATE_LIMIT_BUCKET_KEY_TOO_LONG"

// ErrCodeBucketKeyExpression is the value of
// actions.service.rate_limit.error.code when a bucket key element that is
// a CEL expression failed (for example a missing map key); the element
// then counts as the empty string, and the error goes to the Sink.
const ErrCodeBucketKeyExpression = "ERR_RATE_LIMIT_BUCKET_KEY_EXPRESSION"

// msgBucketKeyExpression is actions.service.rate_limit.error.message with
// ErrCodeBucketKeyExpression.
const msgBucketKeyExpression = "a bucket key expression failed and counted as the empty string"

// ActionRateLimit is the rate-limit action: it counts requests in
// buckets (package ratelimit) and refuses those over the limit.
const ActionRateLimit = "rate-limit"

// rateLimitType is the rate-limit action's registry entry. compileRateLimit
// refuses it in a connection policy with a reason of its own.
var rateLimitType = builtinType{name: ActionRateLimit, compile: compileRateLimit, httpOnly: true,
	results: []ResultField{
		{Name: rlBucketKey, Type: ResultString, HTTPOnly: true},
		{Name: rlLimited, Type: ResultBool, HTTPOnly: true},
		{Name: rlErrorCode, Type: ResultString, HTTPOnly: true},
		{Name: rlErrorMessage, Type: ResultString, HTTPOnly: true},
		{Name: rlLimit, Type: ResultInt, HTTPOnly: true},
		{Name: rlRemaining, Type: ResultInt, HTTPOnly: true},
		{Name: rlReset, Type: ResultInt, HTTPOnly: true},
	}}

// rateLimitConfig is ratelimit.Config plus the policy's enforce switch.
type rateLimitConfig struct {
	Name      string   `json:"name"`
	Algorithm string   `json:"algorithm"`
	Capacity  uint64   `json:"capacity"`
	Rate      string   `json:"rate"`
	BucketKey []string `json:"bucket_key"`
	Enforce   *bool    `json:"enforce"`
	// Headers is an extension of SPEC 2.8: RateLimitHeadersNone (or
	// empty), RateLimitHeadersIETF or RateLimitHeadersX.
	Headers string `json:"headers"`
	// ClientIPPrefix is an extension of SPEC 2.8: the prefix lengths of
	// the conn.client_ip_prefix key element, an object {"ipv4": 0-32,
	// "ipv6": 0-128}, each optional (defaults 32 and 64).
	ClientIPPrefix json.RawMessage `json:"client_ip_prefix"`
}

// prefixConfig is the client_ip_prefix object.
type prefixConfig struct {
	IPv4 *int `json:"ipv4"`
	IPv6 *int `json:"ipv6"`
}

type rateLimitAction struct {
	lim     *ratelimit.Limiter
	pooled  *pooledLimiter // lim's pool entry
	elems   []keyElem
	enforce bool
	key     ResultSlot
	limited ResultSlot
	code    ResultSlot
	msg     ResultSlot
	limit   ResultSlot
	remain  ResultSlot
	reset   ResultSlot

	// headers is the config's headers field; policyHeader the value of
	// RateLimit-Policy (ietf) or X-RateLimit-Limit (x-ratelimit), and
	// ietfName the quoted policy name that starts the RateLimit value.
	headers      string
	policyHeader string
	ietfName     string

	// v4Bits and v6Bits are the prefix lengths of conn.client_ip_prefix.
	v4Bits, v6Bits int
	// exprs is the number of CEL elements.
	exprs int
}

type keyElem struct {
	kind  ratelimit.KeyElementKind
	lower string    // header name
	canon string    // its canonical spelling
	expr  *tmplExpr // the CEL expression of a keyCEL element
}

// keyCEL is the kind of a bucket key element that is a CEL expression.
const keyCEL ratelimit.KeyElementKind = -1

// keyElementForms lists the fixed bucket key element forms.
const keyElementForms = `"req.host", "conn.client_ip", "conn.client_ip_prefix", "req.headers['<header-name>']", "getReqHeader('<Header-Name>')"`

func compileRateLimit(c *CompileContext, config []byte) (Action, error) {
	var cfg rateLimitConfig
	if err := c.DecodeConfig(config, &cfg); err != nil {
		return nil, err
	}
	var vs apierr.Violations
	switch {
	case c.Target() == TargetConnection:
		vs.Add("type", "rate-limit is only available in HTTP policies (its bucket key reads the HTTP request)")
		return nil, vs.Err()
	case c.Phase() != Inbound:
		vs.Add("type", "rate-limit is only available in inbound (on_http_request) rules")
		return nil, vs.Err()
	}
	switch cfg.Headers {
	case "", RateLimitHeadersNone, RateLimitHeadersIETF, RateLimitHeadersX:
	default:
		vs.Add("config.headers", "must be %q, %q or %q, got %s", RateLimitHeadersNone, RateLimitHeadersIETF, RateLimitHeadersX, quoteTrunc(cfg.Headers))
		return nil, vs.Err()
	}
	rc := ratelimit.Config{Name: cfg.Name, Algorithm: cfg.Algorithm, Capacity: cfg.Capacity, Rate: cfg.Rate, BucketKey: cfg.BucketKey}
	// Each element is one of the forms of SPEC 2.8 (and
	// conn.client_ip_prefix), else a string-typed CEL expression.
	elems := make([]ratelimit.KeyElement, 0, len(cfg.BucketKey))
	exprs := make([]*tmplExpr, 0, len(cfg.BucketKey))
	err := rc.ValidateKeys(func(s string) error {
		el, err := ratelimit.ParseKeyElement(s)
		if err == nil || s == "" {
			elems, exprs = append(elems, el), append(exprs, nil)
			return err
		}
		x, msgs := c.c.stringExpr(s)
		elems, exprs = append(elems, ratelimit.KeyElement{Kind: keyCEL}), append(exprs, x)
		if x == nil && len(msgs) > 0 {
			return apierr.Invalidf("", "is neither one of %s nor a string-typed CEL expression: %s",
				keyElementForms, strings.Join(msgs, "; "))
		}
		return nil
	})
	if err != nil {
		vs.AddError("config", err)
		return nil, vs.Err()
	}
	window, _ := ratelimit.ParseRate(rc.Rate)
	opts := ratelimit.Options{Capacity: rc.Capacity, Window: window, MaxKeys: c.c.e.maxKeys}
	a := &rateLimitAction{enforce: cfg.Enforce == nil || *cfg.Enforce,
		v4Bits: ratelimit.DefaultIPv4PrefixBits, v6Bits: ratelimit.DefaultIPv6PrefixBits}
	if err := a.prefixLengths(cfg.ClientIPPrefix, elems); err != nil {
		return nil, err
	}
	switch cfg.Headers {
	case RateLimitHeadersIETF:
		a.headers = cfg.Headers
		a.ietfName = sfString(rc.Name)
		a.policyHeader = a.ietfName + ";q=" + strconv.FormatUint(opts.Capacity, 10) +
			";w=" + strconv.FormatInt(int64(opts.Window/time.Second), 10)
	case RateLimitHeadersX:
		a.headers = cfg.Headers
		a.policyHeader = strconv.FormatUint(opts.Capacity, 10)
	}
	var id []byte
	for i, el := range elems {
		ke := keyElem{kind: el.Kind, expr: exprs[i]}
		switch el.Kind {
		case ratelimit.KeyHeader:
			ke.lower = asciiLower(el.Header)
			ke.canon = canonKey(ke.lower)
		case keyCEL:
			a.exprs++
			a.elems = append(a.elems, ke)
			id = ratelimit.AppendKeyPart(id, "cel:"+cfg.BucketKey[i])
			continue
		}
		a.elems = append(a.elems, ke)
		id = ratelimit.AppendKeyPart(id, el.String())
		if el.Kind == ratelimit.KeyClientIPPrefix {
			id = append(id, byte(a.v4Bits), byte(a.v6Bits))
		}
	}
	a.pooled, err = c.c.e.limiters.get(limiterKey{
		scope:     c.Scope(),
		name:      rc.Name,
		capacity:  opts.Capacity,
		window:    opts.Window,
		bucketKey: string(id),
		maxKeys:   opts.MaxKeys,
	}, opts, c.c.e.clock())
	if err != nil {
		vs.AddError("config", err)
		return nil, vs.Err()
	}
	a.lim = a.pooled.lim
	for _, s := range []struct {
		slot *ResultSlot
		name string
	}{{&a.key, rlBucketKey}, {&a.limited, rlLimited}, {&a.code, rlErrorCode}, {&a.msg, rlErrorMessage},
		{&a.limit, rlLimit}, {&a.remain, rlRemaining}, {&a.reset, rlReset}} {
		if *s.slot, err = c.Result(s.name); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// errBucketKeyTooLong is reported when a bucket key is truncated; its
// message is also the value of actions.service.rate_limit.error.message.
var errBucketKeyTooLong = errors.New("the bucket key is longer than " + strconv.Itoa(limits.MaxBucketKeyBytes) + " bytes and was truncated")

// Run counts the request in its bucket and, when the bucket is full and
// enforce is on, ends evaluation with 429 and retry-after.
//
// The bucket key is built in the state's scratch buffer without
// allocating: the client IP is appended in its textual form rather than
// formatted as a string, and several header values are appended joined by
// ",". The result variables are set only when the policy reads them; the
// bucket_key display string, the one that costs allocations, is only built
// then.
func (a *rateLimitAction) Run(r *RunContext) {
	st := r.st
	key := st.buf[:0]
	vals := st.keyVals[:0]
	var exprErr error
	for i, el := range a.elems {
		switch el.kind {
		case keyCEL:
			v, err := st.evalStringExpr(el.expr)
			if err != nil && exprErr == nil && !st.exhausted {
				exprErr = fmt.Errorf("bucket_key[%d]: %w", i, err)
			}
			vals = append(vals, v)
			key = ratelimit.AppendKeyPart(key, v)
		case ratelimit.KeyHost:
			key = ratelimit.AppendKeyPart(key, st.req.Host)
		case ratelimit.KeyClientIP:
			key = appendAddrKeyPart(key, st.clientAddr())
		case ratelimit.KeyClientIPPrefix:
			key = ratelimit.AppendPrefixKeyPart(key, st.clientAddr(), a.v4Bits, a.v6Bits)
		case ratelimit.KeyHeader:
			v, _ := lookupHeaderLower(st.reqHeader, el.lower, el.canon, &st.reqScan)
			key = appendJoinedKeyPart(key, v)
		default:
			key = ratelimit.AppendKeyPart(key, "")
		}
	}
	st.keyVals = vals
	if a.exprs > 0 {
		defer clear(st.keyVals) // keep no request data alive in the pool
	}
	if st.exhausted { // a key expression ran out of budget: evaluation fails closed
		st.buf = key[:0]
		return
	}
	if exprErr != nil {
		r.ReportError(exprErr)
	}
	tooLong := len(key) > limits.MaxBucketKeyBytes
	if tooLong {
		key = key[:limits.MaxBucketKeyBytes]
		r.ReportError(errBucketKeyTooLong)
	}
	if a.pooled.released.Load() { // the pool dropped lim, idle, but this policy lives on
		a.pooled.pool.adopt(a.pooled)
	}
	d := a.lim.AllowBytesAt(key, st.now)
	st.buf = key[:0]
	if st.pol.readsResult(a.key.slot) {
		r.SetString(a.key, a.shown(st))
	}
	r.SetBool(a.limited, !d.Allowed)
	r.SetInt(a.limit, int64(d.Limit))
	r.SetInt(a.remain, int64(d.Remaining))
	r.SetInt(a.reset, d.ResetSeconds())
	switch {
	case exprErr != nil:
		r.SetString(a.code, ErrCodeBucketKeyExpression)
		r.SetString(a.msg, msgBucketKeyExpression)
	case tooLong:
		r.SetString(a.code, ErrCodeBucketKeyTooLong)
		r.SetString(a.msg, errBucketKeyTooLong.Error())
	default:
		r.SetString(a.code, "")
		r.SetString(a.msg, "")
	}
	if !d.Allowed && a.enforce {
		h := http.Header{"Retry-After": {strconv.FormatInt(d.RetryAfterSeconds(), 10)}}
		a.setHeaders(h, d)
		r.Respond(http.StatusTooManyRequests, h, "")
		return
	}
	if a.headers != "" {
		a.setHeaders(st.responseHeader(), d)
	}
}

// setHeaders sets the rate-limit response headers of the config's form in
// h, replacing those of an earlier rate-limit action.
func (a *rateLimitAction) setHeaders(h http.Header, d ratelimit.Decision) {
	reset := strconv.FormatInt(d.ResetSeconds(), 10)
	switch a.headers {
	case RateLimitHeadersIETF:
		h["Ratelimit-Policy"] = []string{a.policyHeader}
		h["Ratelimit"] = []string{a.ietfName + ";r=" + strconv.FormatUint(d.Remaining, 10) + ";t=" + reset}
	case RateLimitHeadersX:
		h["X-Ratelimit-Limit"] = []string{a.policyHeader}
		h["X-Ratelimit-Remaining"] = []string{strconv.FormatUint(d.Remaining, 10)}
		h["X-Ratelimit-Reset"] = []string{reset}
	}
}

// sfString returns name as a structured-field string (RFC 8941): quoted,
// with '"' and '\' escaped, and every character outside printable ASCII,
// which the syntax cannot carry, replaced by '_'.
func sfString(name string) string {
	b := make([]byte, 0, len(name)+2)
	b = append(b, '"')
	for _, r := range name {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r >= 0x20 && r < 0x7f:
			b = append(b, byte(r))
		default:
			b = append(b, '_')
		}
	}
	return string(append(b, '"'))
}

// shown returns the value of actions.service.rate_limit.bucket_key: the
// key elements' values joined by ",", truncated to limits.MaxBucketKeyBytes. One
// element's value is returned as it is; several are joined in the state's
// scratch buffer, so that only the result is allocated.
func (a *rateLimitAction) shown(st *evalState) string {
	var shown string
	if len(a.elems) == 1 {
		el := a.elems[0]
		switch el.kind {
		case ratelimit.KeyHost:
			shown = st.req.Host
		case ratelimit.KeyClientIP:
			shown = st.clientIP()
		case ratelimit.KeyClientIPPrefix:
			shown = string(a.appendPrefix(st.buf[:0], st))
		case keyCEL:
			shown = st.keyVals[0]
		case ratelimit.KeyHeader:
			v, _ := lookupHeaderLower(st.reqHeader, el.lower, el.canon, &st.reqScan)
			shown = strings.Join(v, ",")
		}
	} else {
		b := st.buf[:0]
		nexpr := 0
		for i, el := range a.elems {
			if i > 0 {
				b = append(b, ',')
			}
			switch el.kind {
			case keyCEL:
				b = append(b, st.keyVals[nexpr]...)
				nexpr++
			case ratelimit.KeyHost:
				b = append(b, st.req.Host...)
			case ratelimit.KeyClientIP:
				if ip := st.clientAddr(); ip.IsValid() {
					b = ip.AppendTo(b)
				}
			case ratelimit.KeyClientIPPrefix:
				b = a.appendPrefix(b, st)
			case ratelimit.KeyHeader:
				v, _ := lookupHeaderLower(st.reqHeader, el.lower, el.canon, &st.reqScan)
				for j, s := range v {
					if j > 0 {
						b = append(b, ',')
					}
					b = append(b, s...)
				}
			}
		}
		shown = string(b)
		st.buf = b[:0]
	}
	if len(shown) > limits.MaxBucketKeyBytes {
		shown = truncate(shown, limits.MaxBucketKeyBytes)
	}
	return shown
}

// appendPrefix appends the text of the client's prefix (nothing when the
// client IP is unknown).
func (a *rateLimitAction) appendPrefix(b []byte, st *evalState) []byte {
	ip := st.clientAddr()
	if !ip.IsValid() {
		return b
	}
	bits := a.v6Bits
	if ip.Is4() {
		bits = a.v4Bits
	}
	if p, err := ip.Prefix(bits); err == nil {
		b = p.AppendTo(b)
	}
	return b
}

// prefixLengths decodes the client_ip_prefix config into a's prefix
// lengths. It is refused without a conn.client_ip_prefix element, which
// is the only one it changes.
func (a *rateLimitAction) prefixLengths(raw json.RawMessage, elems []ratelimit.KeyElement) error {
	if len(raw) == 0 || isNull(raw) {
		return nil
	}
	var vs apierr.Violations
	const field = "config.client_ip_prefix"
	var pc prefixConfig
	if err := decodeStrict(raw, &pc); err != nil {
		for _, v := range apierr.ViolationsOf(err) {
			vs.Add(field+strings.TrimPrefix(v.Field, "config"), "%s", v.Reason)
		}
		return vs.Err()
	}
	if pc.IPv4 != nil {
		if *pc.IPv4 < 0 || *pc.IPv4 > 32 {
			vs.Add(field+".ipv4", "must be a prefix length from 0 to 32, got %d", *pc.IPv4)
		}
		a.v4Bits = *pc.IPv4
	}
	if pc.IPv6 != nil {
		if *pc.IPv6 < 0 || *pc.IPv6 > 128 {
			vs.Add(field+".ipv6", "must be a prefix length from 0 to 128, got %d", *pc.IPv6)
		}
		a.v6Bits = *pc.IPv6
	}
	uses := false
	for _, el := range elems {
		uses = uses || el.Kind == ratelimit.KeyClientIPPrefix
	}
	if !uses {
		vs.Add(field, "applies only to the conn.client_ip_prefix bucket key element, and bucket_key has none (conn.client_ip is always the whole address)")
	}
	return vs.Err()
}

// appendAddrKeyPart appends ratelimit.AppendKeyPart(dst, addrString(ip))
// without formatting the address as a string: its text is appended in
// place after a one-byte length, which is the uvarint of every length
// below 128 (an address without zone has at most 39 characters).
func appendAddrKeyPart(dst []byte, ip netip.Addr) []byte {
	if !ip.IsValid() {
		return ratelimit.AppendKeyPart(dst, "")
	}
	n := len(dst)
	dst = ip.AppendTo(append(dst, 0))
	l := len(dst) - n - 1
	if l >= 0x80 { // cannot happen; keep the encoding exact regardless
		text := string(dst[n+1:])
		return ratelimit.AppendKeyPart(dst[:n], text)
	}
	dst[n] = byte(l)
	return dst
}

// appendJoinedKeyPart appends ratelimit.AppendKeyPart(dst,
// strings.Join(vals, ",")) without building the joined string: the part's
// length as a uvarint, then the values separated by commas.
func appendJoinedKeyPart(dst []byte, vals []string) []byte {
	switch len(vals) {
	case 0:
		return ratelimit.AppendKeyPart(dst, "")
	case 1:
		return ratelimit.AppendKeyPart(dst, vals[0])
	}
	n := len(vals) - 1
	for _, v := range vals {
		n += len(v)
	}
	dst = binary.AppendUvarint(dst, uint64(n))
	for i, v := range vals {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, v...)
	}
	return dst
}
