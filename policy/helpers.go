package policy

// The package's helper functions beyond header and query lookups (issue
// 19, item 4): cookies by name, URL parsing and hashes. Each is charged
// the same on the native path and on cel-go (helperCost), and estimated
// at compile time from its argument's size.

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/url"
	"strings"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
)

// Function names and overload IDs of the helpers.
const (
	fnGetReqCookie = "getReqCookie"
	fnHasReqCookie = "hasReqCookie"
	fnParseURL     = "parseURL"
	fnSHA256       = "sha256"
	fnSHA1         = "sha1"
	fnMD5          = "md5"

	ovGetReqCookie = "getReqCookie_string"
	ovHasReqCookie = "hasReqCookie_string"
	ovParseURL     = "parseURL_string"
	ovSHA256       = "sha256_string"
	ovSHA1         = "sha1_string"
	ovMD5          = "md5_string"
)

// helperCost is the cost of a helper call that reads n code points: the
// call, plus CEL's traversal of its input.
func helperCost(n uint64) uint64 { return 1 + traversalCost(n) }

// cookieHeaderSize is the size of the request's Cookie header values,
// which a cookie lookup reads.
func (st *evalState) cookieHeaderSize() uint64 {
	v, _ := lookupHeaderLower(st.reqHeader, "cookie", "Cookie", &st.reqScan)
	var n uint64
	for _, s := range v {
		n += size(s)
	}
	return n
}

// eachCookie calls f with the name and value of every cookie of the
// request's Cookie headers, in order, until f returns false. Pairs are
// separated by ';', names and values trimmed of spaces, a value's
// surrounding double quotes removed, as net/http reads them; a pair
// without '=' is skipped.
func (st *evalState) eachCookie(f func(name, value string) bool) {
	v, _ := lookupHeaderLower(st.reqHeader, "cookie", "Cookie", &st.reqScan)
	for _, line := range v {
		for line != "" {
			var part string
			part, line, _ = strings.Cut(line, ";")
			name, val, ok := strings.Cut(part, "=")
			if !ok {
				continue
			}
			name, val = strings.TrimSpace(name), strings.TrimSpace(val)
			if len(val) >= 2 && val[0] == '"' && val[len(val)-1] == '"' {
				val = val[1 : len(val)-1]
			}
			if name != "" && !f(name, val) {
				return
			}
		}
	}
}

// cookieValues returns the values of the request's cookies named name
// (case-sensitive), nil when there are none.
func (st *evalState) cookieValues(name string) []string {
	var out []string
	st.eachCookie(func(n, v string) bool {
		if n == name {
			out = append(out, v)
		}
		return true
	})
	return out
}

// hasCookie reports whether the request has a cookie named name.
func (st *evalState) hasCookie(name string) bool {
	found := false
	st.eachCookie(func(n, _ string) bool {
		found = n == name
		return !found
	})
	return found
}

// parseURLMap parses s as a URL (absolute, or a reference such as
// "/path?q") into its parts.
func parseURLMap(s string) (map[string]string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, errors.New("parseURL: invalid URL")
	}
	return map[string]string{
		"scheme":   u.Scheme,
		"host":     u.Host,
		"hostname": u.Hostname(),
		"port":     u.Port(),
		"path":     u.Path,
		"raw_path": u.EscapedPath(),
		"query":    u.RawQuery,
		"fragment": u.Fragment,
	}, nil
}

// hashHex returns the lower-case hex digest of s.
func hashHex(ov, s string) string {
	switch ov {
	case ovSHA256:
		h := sha256.Sum256([]byte(s))
		return hex.EncodeToString(h[:])
	case ovSHA1:
		h := sha1.Sum([]byte(s))
		return hex.EncodeToString(h[:])
	default:
		h := md5.Sum([]byte(s))
		return hex.EncodeToString(h[:])
	}
}

// hashOverloads maps the hash functions' names to their overload IDs.
var hashOverloads = map[string]string{fnSHA256: ovSHA256, fnSHA1: ovSHA1, fnMD5: ovMD5}

// CEL bindings.

func (st *evalState) celCookieList(args []ref.Val) ref.Val {
	name, ok := argString(args)
	if !ok {
		return types.NoSuchOverloadErr()
	}
	v := st.cookieValues(name)
	if len(v) == 0 {
		return emptyList
	}
	return types.NewStringList(types.DefaultTypeAdapter, v)
}

func (st *evalState) celHasCookie(args []ref.Val) ref.Val {
	name, ok := argString(args)
	if !ok {
		return types.NoSuchOverloadErr()
	}
	return types.Bool(st.hasCookie(name))
}

func celParseURL(arg ref.Val) ref.Val {
	s, ok := arg.(types.String)
	if !ok {
		return types.NoSuchOverloadErr()
	}
	m, err := parseURLMap(string(s))
	if err != nil {
		return types.NewErrFromString(err.Error())
	}
	return types.NewStringStringMap(types.DefaultTypeAdapter, m)
}

func celHash(ov string) func(ref.Val) ref.Val {
	return func(arg ref.Val) ref.Val {
		s, ok := arg.(types.String)
		if !ok {
			return types.NoSuchOverloadErr()
		}
		return types.String(hashHex(ov, string(s)))
	}
}

// helperCallCost is the runtime cost of a helper call on cel-go; ok is
// false for another function. (A value, not a pointer: a pointer to a
// local would be allocated on every call of every function.)
func (st *evalState) helperCallCost(overloadID string, args []ref.Val) (c uint64, ok bool) {
	switch overloadID {
	case ovGetReqCookie, ovHasReqCookie:
		return helperCost(st.cookieHeaderSize()), true
	case ovParseURL, ovSHA256, ovSHA1, ovMD5:
		if len(args) != 1 {
			return 0, false
		}
		s, isStr := args[0].(types.String)
		if !isStr {
			return 0, false
		}
		return helperCost(size(string(s))), true
	}
	return 0, false
}

// Native nodes.

type cookieList struct{ name snode }

func (n cookieList) evalL(st *evalState) ([]string, bool) {
	s, ok := n.name.evalS(st)
	if !ok {
		return nil, false
	}
	if !st.charge(helperCost(st.cookieHeaderSize())) {
		return nil, false
	}
	return st.cookieValues(s), true
}

type hasCookieNode struct{ name snode }

func (n hasCookieNode) evalB(st *evalState) tri {
	s, ok := n.name.evalS(st)
	if !ok {
		return st.failed()
	}
	if !st.charge(helperCost(st.cookieHeaderSize())) {
		return st.failed()
	}
	return triOf(st.hasCookie(s))
}

type hashNode struct {
	ov string
	s  snode
}

func (n hashNode) evalS(st *evalState) (string, bool) {
	s, ok := n.s.evalS(st)
	if !ok {
		return "", false
	}
	if !st.charge(helperCost(size(s))) {
		return "", false
	}
	return hashHex(n.ov, s), true
}
