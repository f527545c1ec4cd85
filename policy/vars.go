package policy

import (
	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	celtypes "cel.dev/cel-go/common/types"
)

// varID identifies a variable for the evaluator. Static variables have fixed
// IDs; action result variables get IDs from resultBase upwards.
type varID uint16

const (
	vNone varID = iota
	vReqMethod
	vReqHost
	vReqURL
	vReqURLPath
	vReqURLQuery
	vReqURLScheme
	vReqURLQueryParams
	vReqHeaders
	vReqContentLength
	vReqUserAgent
	vReqVersion
	vResStatusCode
	vResHeaders
	vConnClientIP
	vConnClientPort
	vConnServerIP
	vConnServerPort
	vConnTSStart
	vConnTLSSNI
	vConnTLSVersion
	vTimeNow
	vVars
	vReqCookies
	vReqURLHost
	vReqURLPort
	vReqURLRawPath
	vReqContentType
	vConnTLSCipher
	vConnTLSALPN
	vConnCertSubject
	vConnCertIssuer
	vConnCertSANs
	vConnCertFingerprint
	vEndpointEdgeID
	vEndpointRouteID
	vOIDCAuthenticated
	vOIDCSubject
	vOIDCIssuer
	vOIDCEmail
	vOIDCEmailVerified
	vOIDCName
	vOIDCPreferredUsername
	resultBase
)

// valueKind is the runtime representation of a variable.
type valueKind uint8

const (
	kString valueKind = iota + 1
	kInt
	kBool
	kTimestamp
	kStringListMap // map(string, list(string))
	kStringMap     // map(string, string): vars
	kStringList    // list(string)
)

// avail says where a variable or function may be used.
type avail uint8

const (
	availHTTPIn avail = 1 << iota
	availHTTPOut
	availConn

	availHTTP = availHTTPIn | availHTTPOut
	availAll  = availHTTP | availConn
)

// varInfo describes one variable: its CEL declaration, where it is
// available and how it is documented.
type varInfo struct {
	name  string
	id    varID
	kind  valueKind
	avail avail
}

var staticVars = []varInfo{
	{"req.method", vReqMethod, kString, availHTTP},
	{"req.host", vReqHost, kString, availHTTP},
	{"req.url", vReqURL, kString, availHTTP},
	{"req.url.path", vReqURLPath, kString, availHTTP},
	{"req.url.query", vReqURLQuery, kString, availHTTP},
	{"req.url.scheme", vReqURLScheme, kString, availHTTP},
	{"req.url.query_params", vReqURLQueryParams, kStringListMap, availHTTP},
	{"req.headers", vReqHeaders, kStringListMap, availHTTP},
	{"req.content_length", vReqContentLength, kInt, availHTTP},
	{"req.user_agent", vReqUserAgent, kString, availHTTP},
	{"req.version", vReqVersion, kString, availHTTP},
	{"res.status_code", vResStatusCode, kInt, availHTTPOut},
	{"res.headers", vResHeaders, kStringListMap, availHTTPOut},
	{"conn.client_ip", vConnClientIP, kString, availAll},
	{"conn.client_port", vConnClientPort, kInt, availAll},
	{"conn.server_ip", vConnServerIP, kString, availAll},
	{"conn.server_port", vConnServerPort, kInt, availAll},
	{"conn.ts.start", vConnTSStart, kTimestamp, availAll},
	{"conn.tls.sni", vConnTLSSNI, kString, availAll},
	{"conn.tls.version", vConnTLSVersion, kString, availAll},
	{"time.now", vTimeNow, kTimestamp, availAll},
	{"vars", vVars, kStringMap, availAll},
	// Issue 19, item 5.
	{"req.cookies", vReqCookies, kStringListMap, availHTTP},
	{"req.url.host", vReqURLHost, kString, availHTTP},
	{"req.url.port", vReqURLPort, kInt, availHTTP},
	{"req.url.raw_path", vReqURLRawPath, kString, availHTTP},
	{"req.content_type", vReqContentType, kString, availHTTP},
	{"conn.tls.cipher_suite", vConnTLSCipher, kString, availAll},
	{"conn.tls.alpn", vConnTLSALPN, kString, availAll},
	{"conn.tls.client_cert.subject", vConnCertSubject, kString, availAll},
	{"conn.tls.client_cert.issuer", vConnCertIssuer, kString, availAll},
	{"conn.tls.client_cert.sans", vConnCertSANs, kStringList, availAll},
	{"conn.tls.client_cert.fingerprint", vConnCertFingerprint, kString, availAll},
	{"endpoint.edge_id", vEndpointEdgeID, kString, availAll},
	{"endpoint.route_id", vEndpointRouteID, kString, availHTTP},
	// Issue 17: the identity of the route's OIDC module (Request.OIDC).
	{"oidc.authenticated", vOIDCAuthenticated, kBool, availHTTP},
	{"oidc.subject", vOIDCSubject, kString, availHTTP},
	{"oidc.issuer", vOIDCIssuer, kString, availHTTP},
	{"oidc.email", vOIDCEmail, kString, availHTTP},
	{"oidc.email_verified", vOIDCEmailVerified, kBool, availHTTP},
	{"oidc.name", vOIDCName, kString, availHTTP},
	{"oidc.preferred_username", vOIDCPreferredUsername, kString, availHTTP},
}

func celTypeOf(k valueKind) *cel.Type {
	switch k {
	case kString:
		return cel.StringType
	case kInt:
		return cel.IntType
	case kBool:
		return cel.BoolType
	case kTimestamp:
		return cel.TimestampType
	case kStringMap:
		return cel.MapType(cel.StringType, cel.StringType)
	case kStringList:
		return cel.ListType(cel.StringType)
	default:
		return cel.MapType(cel.StringType, cel.ListType(cel.StringType))
	}
}

// funcInfo describes one of the package's CEL functions.
type funcInfo struct {
	name  string
	avail avail
}

// Function names; availability is checked after type-checking.
const (
	fnGetReqHeader  = "getReqHeader"
	fnGetResHeader  = "getResHeader"
	fnHasReqHeader  = "hasReqHeader"
	fnHasResHeader  = "hasResHeader"
	fnGetQueryParam = "getQueryParam"
	fnHasQueryParam = "hasQueryParam"
	fnInCidrRange   = "inCidrRange"
	fnInCidrRanges  = "inCidrRanges"
)

var ownFuncs = map[string]avail{
	fnGetReqHeader:  availHTTP,
	fnGetResHeader:  availHTTPOut,
	fnHasReqHeader:  availHTTP,
	fnHasResHeader:  availHTTPOut,
	fnGetQueryParam: availHTTP,
	fnHasQueryParam: availHTTP,
	fnInCidrRange:   availAll,
	fnInCidrRanges:  availAll,
	fnGetReqCookie:  availHTTP,
	fnHasReqCookie:  availHTTP,
	fnParseURL:      availAll,
	fnSHA256:        availAll,
	fnSHA1:          availAll,
	fnMD5:           availAll,
}

// availFor returns the availability bit of a target and phase.
func availFor(t Target, ph Phase) avail {
	switch {
	case t == TargetConnection:
		return availConn
	case ph == Outbound:
		return availHTTPOut
	default:
		return availHTTPIn
	}
}

// unavailableReason explains why something with availability a cannot be
// used in a policy for t in phase ph.
func unavailableReason(what string, a avail, t Target, ph Phase) string {
	switch {
	case t == TargetConnection && a&availConn == 0:
		return what + " is only available in HTTP policies; this policy is for TLS/TCP connections, which see conn.* and time.now only"
	case ph == Inbound && a&availHTTPIn == 0:
		return what + " is only available in outbound (on_http_response) rules"
	default:
		return what + " is not available here"
	}
}

// checkVars refuses a read of vars.<name> (or vars['<name>']) that no
// earlier set-vars action sets, and notes reads of vars in outbound rules.
func (c *compiler) checkVars(e *ast.AST, at func(id int64, msg string)) {
	uses := false
	ast.PostOrderVisit(e.Expr(), ast.NewExprVisitor(func(x ast.Expr) {
		var name string
		switch x.Kind() {
		case ast.IdentKind:
			uses = uses || x.AsIdent() == "vars"
			return
		case ast.SelectKind:
			sel := x.AsSelect()
			if op := sel.Operand(); op.Kind() != ast.IdentKind || op.AsIdent() != "vars" {
				return
			}
			name = sel.FieldName()
		case ast.CallKind:
			call := x.AsCall()
			args := call.Args()
			if call.FunctionName() != "_[_]" || len(args) != 2 || args[0].Kind() != ast.IdentKind || args[0].AsIdent() != "vars" ||
				args[1].Kind() != ast.LiteralKind {
				return
			}
			s, ok := args[1].AsLiteral().(celtypes.String)
			if !ok {
				return
			}
			name = string(s)
		default:
			return
		}
		if !c.setVars[name] {
			at(x.ID(), "vars."+name+" is not set by a set-vars or jwt-validation action before this point of the document")
		}
	}))
	if uses && c.phase == Outbound {
		c.outReadsVars = true
	}
}
