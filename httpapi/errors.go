package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/edgeplane/edgeplane/apierr"
)

// errorBody is the wire shape of every error.
type errorBody struct {
	// ErrorCode is the stable code of the error, ERR_SERVICE_<n>.
	ErrorCode string `json:"error_code"`
	// StatusCode repeats the HTTP status of the response.
	StatusCode int `json:"status_code"`
	// Msg says what was wrong and what is allowed; with several
	// violations, the first and how many more there are.
	Msg string `json:"msg"`
	// Details identifies the request.
	Details errorDetails `json:"details"`
	// Violations are the broken field rules, the first MaxViolations in
	// the order found; absent when there are none.
	Violations []apierr.Violation `json:"violations,omitempty"`
	// ViolationsOmitted counts the violations beyond the first
	// MaxViolations, which are not listed; absent when there are none.
	ViolationsOmitted int `json:"violations_omitted,omitempty"`
}

// errorDetails identifies the request an error answers.
type errorDetails struct {
	// OperationID is the request's identifier, as in the
	// Service-Operation-Id header: quote it when reporting a problem.
	OperationID string `json:"operation_id"`
}

// statusOf is the one table mapping error codes to HTTP statuses.
var statusOf = map[apierr.Code]int{
	apierr.InvalidArgument:      http.StatusBadRequest,
	apierr.Unauthenticated:      http.StatusUnauthorized,
	apierr.PermissionDenied:     http.StatusForbidden,
	apierr.NotFound:             http.StatusNotFound,
	apierr.MethodNotAllowed:     http.StatusMethodNotAllowed,
	apierr.Conflict:             http.StatusConflict,
	apierr.FailedPrecondition:   http.StatusConflict,
	apierr.PayloadTooLarge:      http.StatusRequestEntityTooLarge,
	apierr.UnsupportedMediaType: http.StatusUnsupportedMediaType,
	apierr.ResourceExhausted:    http.StatusTooManyRequests,
	apierr.Internal:             http.StatusInternalServerError,
}

// StatusOf returns the HTTP status of an error code (500 for an unknown
// one).
func StatusOf(c apierr.Code) int {
	if s, ok := statusOf[c]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// writeError writes err as the wire error. Internal errors get a generic
// message; their cause goes to the log only.
func (h *Handler) writeError(w *exchange, r *http.Request, err error) {
	code := apierr.CodeOf(err)
	opID := w.opID
	body := errorBody{ErrorCode: code.Wire(), StatusCode: StatusOf(code), Details: errorDetails{OperationID: opID}}
	var ae *apierr.Error
	switch {
	case code == apierr.Internal || !errors.As(err, &ae):
		if errors.Is(err, context.Canceled) {
			h.log.Info("request cancelled", "operation_id", opID)
		} else {
			h.log.Error("internal error", "operation_id", opID, "err", cause(err))
		}
		code = apierr.Internal
		body.ErrorCode, body.StatusCode = code.Wire(), http.StatusInternalServerError
		body.Msg = "internal error; quote operation id " + opID + " when reporting it"
	default:
		var capped *cappedError
		omitted := 0
		if errors.As(err, &capped) {
			omitted = capped.omitted
		}
		body.Msg, body.Violations, body.ViolationsOmitted = bounded(ae, omitted)
	}
	writeJSON(w, body.StatusCode, body)
}

// bounded returns the msg, the listed violations and the number of the
// rest for the wire, given ae and the number of its violations already
// counted but not kept (known): at most [MaxViolations] violations,
// fields cut to [MaxEchoBytes] and reasons to [MaxMessageBytes]. With
// several violations the msg is not ae.Msg (which lists them all) but the
// first and how many more there are, so each is listed once.
func bounded(ae *apierr.Error, known int) (msg string, vs []apierr.Violation, omitted int) {
	all := ae.Violations
	vs = make([]apierr.Violation, min(len(all), MaxViolations))
	for i := range vs {
		vs[i] = apierr.Violation{Field: clip(all[i].Field, MaxEchoBytes), Reason: clip(all[i].Reason, MaxMessageBytes)}
	}
	omitted = len(all) - len(vs) + known
	if len(vs)+omitted < 2 {
		return clip(ae.Msg, MaxMessageBytes), vs, omitted
	}
	const prefix = "invalid request: "
	more := "; and " + strconv.Itoa(len(vs)+omitted-1) + " more violations"
	return prefix + clip(vs[0].String(), MaxMessageBytes-len(prefix)-len(more)) + more, vs, omitted
}

// clip returns s if it has at most n bytes, else its first bytes up to a
// UTF-8 boundary followed by "…", n bytes or fewer in all (n >= 3).
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	i := n - len(ellipsis)
	for j := 0; j < utf8.UTFMax-1 && i > 0 && !utf8.RuneStart(s[i]); j++ {
		i--
	}
	return s[:i] + ellipsis
}

// cause returns the innermost cause of err for the log: an [apierr.Error]'s
// message is client-safe and says nothing; its Err says what happened.
func cause(err error) error {
	var ae *apierr.Error
	for errors.As(err, &ae) && ae.Err != nil {
		err = ae.Err
	}
	return err
}
