// Package apierr is edgeplane's single errors package: every error the
// library returns to a caller carries a stable [Code], unwraps to a sentinel
// usable with [errors.Is], and has a client-safe message.
//
// # Codes
//
// Each code has a stable wire form, ERR_SERVICE_<n>, that transports send to
// clients. The numbers never change meaning.
//
//	Code                  Wire form          Meaning
//	InvalidArgument       ERR_SERVICE_100    the request is malformed or breaks a field rule
//	NotFound              ERR_SERVICE_101    the resource does not exist (or belongs to another account)
//	Conflict              ERR_SERVICE_102    the write clashes with existing state (duplicate, still referenced)
//	FailedPrecondition    ERR_SERVICE_103    the system is not in a state that allows the operation
//	PermissionDenied      ERR_SERVICE_104    the caller is known but may not do this
//	Unauthenticated       ERR_SERVICE_105    no valid credentials were presented
//	ResourceExhausted     ERR_SERVICE_106    a rate limit or quota was reached
//	Internal              ERR_SERVICE_107    an unexpected failure; details are logged, never sent
//	MethodNotAllowed      ERR_SERVICE_108    the HTTP method is not supported on the path
//	PayloadTooLarge       ERR_SERVICE_109    the request body exceeds the size limit
//	UnsupportedMediaType  ERR_SERVICE_110    the request body is not application/json
//
// Only the HTTP transport maps codes to status codes.
//
// # Validation errors
//
// A request that breaks field rules fails with code InvalidArgument and a list
// of every [Violation], each naming the field by its JSON path (acl[2],
// config.rate) and the rule it broke. Collect them with [Violations].
//
// # Messages
//
// [Error.Msg] is safe to show a client: lowercase, says what was wrong and
// what is allowed. A wrapped cause ([Error.Err]) is for logs only.
package apierr

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Code classifies an error. The zero value is not a valid code.
type Code int

// The stable error codes. Their numeric values are part of the wire format
// (see the package doc) and never change.
const (
	InvalidArgument      Code = 100
	NotFound             Code = 101
	Conflict             Code = 102
	FailedPrecondition   Code = 103
	PermissionDenied     Code = 104
	Unauthenticated      Code = 105
	ResourceExhausted    Code = 106
	Internal             Code = 107
	MethodNotAllowed     Code = 108
	PayloadTooLarge      Code = 109
	UnsupportedMediaType Code = 110
)

var codeNames = map[Code]string{
	InvalidArgument:      "invalid argument",
	NotFound:             "not found",
	Conflict:             "conflict",
	FailedPrecondition:   "failed precondition",
	PermissionDenied:     "permission denied",
	Unauthenticated:      "unauthenticated",
	ResourceExhausted:    "resource exhausted",
	Internal:             "internal",
	MethodNotAllowed:     "method not allowed",
	PayloadTooLarge:      "payload too large",
	UnsupportedMediaType: "unsupported media type",
}

// Codes returns every defined code in numeric order.
func Codes() []Code {
	return []Code{InvalidArgument, NotFound, Conflict, FailedPrecondition, PermissionDenied,
		Unauthenticated, ResourceExhausted, Internal, MethodNotAllowed, PayloadTooLarge, UnsupportedMediaType}
}

// String returns the code's lowercase name, for example "not found".
func (c Code) String() string {
	if s, ok := codeNames[c]; ok {
		return s
	}
	return "code(" + strconv.Itoa(int(c)) + ")"
}

// Wire returns the code's stable wire form, ERR_SERVICE_<n>.
func (c Code) Wire() string { return "ERR_SERVICE_" + strconv.Itoa(int(c)) }

// sentinel is the type of the Err* sentinels: a bare code.
type sentinel Code

func (s sentinel) Error() string { return Code(s).String() }

// Sentinels, one per code, for use with [errors.Is]:
//
//	if errors.Is(err, apierr.ErrNotFound) { ... }
var (
	ErrInvalidArgument      error = sentinel(InvalidArgument)
	ErrNotFound             error = sentinel(NotFound)
	ErrConflict             error = sentinel(Conflict)
	ErrFailedPrecondition   error = sentinel(FailedPrecondition)
	ErrPermissionDenied     error = sentinel(PermissionDenied)
	ErrUnauthenticated      error = sentinel(Unauthenticated)
	ErrResourceExhausted    error = sentinel(ResourceExhausted)
	ErrInternal             error = sentinel(Internal)
	ErrMethodNotAllowed     error = sentinel(MethodNotAllowed)
	ErrPayloadTooLarge      error = sentinel(PayloadTooLarge)
	ErrUnsupportedMediaType error = sentinel(UnsupportedMediaType)
)

// Violation is one broken field rule.
type Violation struct {
	// Field is the JSON path of the field, for example "acl[2]" or
	// "config.rate". Empty when the rule concerns the request as a whole.
	Field string `json:"field"`
	// Reason says what rule was broken and what is allowed.
	Reason string `json:"reason"`
}

// String formats the violation as "field: reason".
func (v Violation) String() string {
	if v.Field == "" {
		return v.Reason
	}
	return v.Field + ": " + v.Reason
}

// Error is the error type the library returns.
type Error struct {
	// Code classifies the error.
	Code Code
	// Msg is the client-safe message.
	Msg string
	// Violations lists broken field rules (code InvalidArgument only).
	Violations []Violation
	// Err is the underlying cause, if any. It is for logs and errors.Is,
	// and is never part of the client-safe message.
	Err error
}

// Error returns the client-safe message, prefixed by nothing: the message
// already says what happened.
func (e *Error) Error() string { return e.Msg }

// Unwrap returns the code's sentinel and the cause, so that both
// errors.Is(err, ErrNotFound) and errors.Is(err, cause) hold.
func (e *Error) Unwrap() []error {
	if e.Err != nil {
		return []error{sentinel(e.Code), e.Err}
	}
	return []error{sentinel(e.Code)}
}

// New returns an error with the given code and a message formatted as
// fmt.Sprintf does.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// Wrap returns an error with the given code and client-safe message whose
// cause is err. The cause's text never reaches clients.
func Wrap(code Code, err error, msg string) *Error {
	return &Error{Code: code, Msg: msg, Err: err}
}

// NotFoundf returns a NotFound error.
func NotFoundf(format string, args ...any) *Error { return New(NotFound, format, args...) }

// Conflictf returns a Conflict error.
func Conflictf(format string, args ...any) *Error { return New(Conflict, format, args...) }

// Invalidf returns an InvalidArgument error with a single violation of
// field.
func Invalidf(field, format string, args ...any) *Error {
	var vs Violations
	vs.Add(field, format, args...)
	return vs.Err().(*Error)
}

// CodeOf returns the code of err: the Code of the first [*Error] or sentinel
// in its chain, or Internal for any other non-nil error. CodeOf(nil) is 0.
func CodeOf(err error) Code {
	if err == nil {
		return 0
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	var s sentinel
	if errors.As(err, &s) {
		return Code(s)
	}
	return Internal
}

// ViolationsOf returns the violations carried by err, if any.
func ViolationsOf(err error) []Violation {
	var e *Error
	if errors.As(err, &e) {
		return e.Violations
	}
	return nil
}

// Violations collects broken field rules. The zero value is empty and ready
// to use.
type Violations []Violation

// Add records that field broke a rule; the reason is formatted as
// fmt.Sprintf does.
func (vs *Violations) Add(field, format string, args ...any) {
	*vs = append(*vs, Violation{Field: field, Reason: fmt.Sprintf(format, args...)})
}

// CheckText records that field broke a rule when s, a text a caller or
// a peer sent, is longer than maxBytes bytes or is not valid UTF-8.
func (vs *Violations) CheckText(field, s string, maxBytes int) {
	switch {
	case len(s) > maxBytes:
		vs.Add(field, "must be at most %d bytes, got %d", maxBytes, len(s))
	case !utf8.ValidString(s):
		vs.Add(field, "must be valid UTF-8")
	}
}

// Truncate returns s cut to at most n bytes at a UTF-8 boundary, with
// "…" after it when it was cut: for a message or a log line that repeats
// a text a caller or a peer sent.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// AddError records the violations of err, prefixing each field with prefix
// (joined by "." or directly before an index). A non-validation error
// becomes one violation of prefix with the error's message.
func (vs *Violations) AddError(prefix string, err error) {
	if err == nil {
		return
	}
	var e *Error
	if errors.As(err, &e) && len(e.Violations) > 0 {
		for _, v := range e.Violations {
			*vs = append(*vs, Violation{Field: JoinPath(prefix, v.Field), Reason: v.Reason})
		}
		return
	}
	msg := err.Error()
	if errors.As(err, &e) {
		msg = e.Msg
	}
	*vs = append(*vs, Violation{Field: prefix, Reason: msg})
}

// Err returns nil when no rule was broken, else an InvalidArgument [*Error]
// listing every violation (its message spells out the first
// [MaxMessageViolations]).
func (vs Violations) Err() error {
	if len(vs) == 0 {
		return nil
	}
	parts := make([]string, 0, min(len(vs), MaxMessageViolations))
	for _, v := range vs[:min(len(vs), MaxMessageViolations)] {
		parts = append(parts, v.String())
	}
	msg := "invalid request: " + strings.Join(parts, "; ")
	if rest := len(vs) - len(parts); rest > 0 {
		msg += "; and " + strconv.Itoa(rest) + " more"
	}
	return &Error{
		Code:       InvalidArgument,
		Msg:        msg,
		Violations: append([]Violation(nil), vs...),
	}
}

// MaxMessageViolations is how many violations the message of
// [Violations.Err] spells out; it counts the rest ("; and N more"), so a
// request with thousands of violations does not build a message of
// megabytes. The error's Violations still list every one.
const MaxMessageViolations = 10

// JoinPath joins two JSON path segments: JoinPath("config", "rate") is
// "config.rate", JoinPath("acl", "[2]") is "acl[2]", and an empty side
// yields the other.
func JoinPath(prefix, field string) string {
	switch {
	case prefix == "":
		return field
	case field == "":
		return prefix
	case strings.HasPrefix(field, "["):
		return prefix + field
	default:
		return prefix + "." + field
	}
}
