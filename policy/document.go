package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/policy/limits"
)

// Phase names as they appear in a document. Inbound and outbound are the
// spec's names; the on_* names are accepted as equivalents.
const (
	KeyInbound        = "inbound"
	KeyOutbound       = "outbound"
	KeyOnHTTPRequest  = "on_http_request"
	KeyOnHTTPResponse = "on_http_response"
	KeyOnTCPConnect   = "on_tcp_connect"
)

// Document is a parsed traffic policy document: rule lists per phase. Its
// zero value is an empty document. Parse produces one from JSON; a host may
// also build one directly. A Document says nothing about validity: that is
// decided by [Engine.Compile].
type Document struct {
	// Inbound holds the rules that run before the upstream: on each HTTP
	// request, or on each new connection of a TLS/TCP edge.
	Inbound []Rule
	// Outbound holds the rules that run on each HTTP response.
	Outbound []Rule
	// InboundKey is the name the document used for the inbound phase:
	// "inbound" (also when empty), "on_http_request" or "on_tcp_connect".
	InboundKey string
	// OutboundKey is the name the document used for the outbound phase:
	// "outbound" (also when empty) or "on_http_response".
	OutboundKey string
}

// Rule is one rule of a phase: when all its expressions hold, its actions
// run in order.
type Rule struct {
	// Name is optional and appears in error messages and log entries.
	Name string `json:"name,omitempty"`
	// Expressions are CEL boolean expressions; all must be true for the
	// rule to apply. None means the rule always applies.
	Expressions []string `json:"expressions,omitempty"`
	// Actions run in order when the rule applies. At least one is required.
	Actions []RuleAction `json:"actions"`

	// hasName records that a parsed rule had a name key, so that an empty
	// name survives a round trip.
	hasName bool
}

// MarshalJSON writes the rule compactly. name appears when it is set or
// the parsed document had it; expressions appear when non-nil (a parsed
// document's [] stays []), so a parsed document marshals back to what it
// said, less whitespace.
func (r Rule) MarshalJSON() ([]byte, error) {
	type wire struct {
		Name        *string      `json:"name,omitempty"`
		Expressions *[]string    `json:"expressions,omitempty"`
		Actions     []RuleAction `json:"actions"`
	}
	w := wire{Actions: r.Actions}
	if r.Name != "" || r.hasName {
		w.Name = &r.Name
	}
	if r.Expressions != nil {
		w.Expressions = &r.Expressions
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(w); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// RuleAction is one action of a rule as written in the document.
type RuleAction struct {
	// Type names the action, for example "deny" or "rate-limit".
	Type string `json:"type"`
	// Config is the action's configuration, a JSON object, or nil.
	Config json.RawMessage `json:"config,omitempty"`
}

// Parse decodes a traffic policy document from JSON. It checks only the
// shape of the document: a JSON object whose keys are phase names, each
// holding a list of rules with the fields name, expressions and actions,
// each action an object with type and config. Unknown keys, duplicate keys,
// wrong JSON types and two names for the same phase are refused with an
// InvalidArgument [*apierr.Error] listing every problem with its location.
// Expressions and action configs are checked by [Engine.Compile].
func Parse(data []byte) (*Document, error) {
	var vs apierr.Violations
	if len(data) > limits.MaxDocumentBytes {
		vs.Add("", "document is %d bytes; at most %d are allowed", len(data), limits.MaxDocumentBytes)
		return nil, vs.Err()
	}
	fields, err := objectFields(data, true)
	if err != nil {
		vs.Add("", "document must be a JSON object: %s", jsonErrMsg(err))
		return nil, vs.Err()
	}
	doc := &Document{}
	for _, f := range fields {
		switch f.key {
		case KeyInbound, KeyOnHTTPRequest, KeyOnTCPConnect:
			if doc.Inbound != nil {
				vs.Add(f.key, "%s and %s name the same phase; use one of them", doc.InboundKey, f.key)
				continue
			}
			doc.InboundKey = f.key
			doc.Inbound = parseRules(&vs, f.key, f.val)
		case KeyOutbound, KeyOnHTTPResponse:
			if doc.Outbound != nil {
				vs.Add(f.key, "%s and %s name the same phase; use one of them", doc.OutboundKey, f.key)
				continue
			}
			doc.OutboundKey = f.key
			doc.Outbound = parseRules(&vs, f.key, f.val)
		default:
			vs.Add(f.key, "unknown phase %q; allowed: inbound, outbound, on_http_request, on_http_response, on_tcp_connect", f.key)
		}
	}
	if err := vs.Err(); err != nil {
		return nil, err
	}
	return doc, nil
}

// parseRules decodes a phase's rule list. It returns a non-nil slice (so
// that the phase key survives MarshalJSON) unless the value is invalid.
func parseRules(vs *apierr.Violations, path string, raw json.RawMessage) []Rule {
	if isNull(raw) {
		return []Rule{}
	}
	elems, err := arrayElems(raw)
	if err != nil {
		vs.Add(path, "must be a list of rules")
		return []Rule{}
	}
	rules := make([]Rule, 0, len(elems))
	for i, el := range elems {
		rules = append(rules, parseRule(vs, path+"["+strconv.Itoa(i)+"]", el))
	}
	return rules
}

func parseRule(vs *apierr.Violations, path string, raw json.RawMessage) Rule {
	var r Rule
	fields, err := objectFields(raw, false)
	if err != nil {
		vs.Add(path, "rule must be an object: %s", jsonErrMsg(err))
		return r
	}
	for _, f := range fields {
		fp := path + "." + f.key
		switch f.key {
		case "name":
			if isNull(f.val) {
				continue
			}
			r.hasName = true
			if err := json.Unmarshal(f.val, &r.Name); err != nil {
				vs.Add(fp, "must be a string")
			}
		case "expressions":
			if isNull(f.val) {
				continue
			}
			elems, err := arrayElems(f.val)
			if err != nil {
				vs.Add(fp, "must be a list of strings")
				continue
			}
			r.Expressions = make([]string, len(elems))
			for i, el := range elems {
				if err := json.Unmarshal(el, &r.Expressions[i]); err != nil || isNull(el) {
					vs.Add(fp+"["+strconv.Itoa(i)+"]", "must be a string")
				}
			}
		case "actions":
			if isNull(f.val) {
				continue
			}
			elems, err := arrayElems(f.val)
			if err != nil {
				vs.Add(fp, "must be a list of actions")
				continue
			}
			r.Actions = make([]RuleAction, len(elems))
			for i, el := range elems {
				r.Actions[i] = parseAction(vs, fp+"["+strconv.Itoa(i)+"]", el)
			}
		default:
			vs.Add(fp, "unknown field %q; a rule has name, expressions and actions", f.key)
		}
	}
	return r
}

func parseAction(vs *apierr.Violations, path string, raw json.RawMessage) RuleAction {
	var a RuleAction
	fields, err := objectFields(raw, false)
	if err != nil {
		vs.Add(path, "action must be an object: %s", jsonErrMsg(err))
		return a
	}
	for _, f := range fields {
		fp := path + "." + f.key
		switch f.key {
		case "type":
			if err := json.Unmarshal(f.val, &a.Type); err != nil || isNull(f.val) {
				vs.Add(fp, "must be a string")
			}
		case "config":
			if isNull(f.val) {
				continue
			}
			if _, err := objectFields(f.val, false); err != nil {
				vs.Add(fp, "must be an object: %s", jsonErrMsg(err))
				continue
			}
			a.Config = append(json.RawMessage(nil), f.val...)
		default:
			vs.Add(fp, "unknown field %q; an action has type and config", f.key)
		}
	}
	return a
}

// MarshalJSON returns the document in compact JSON, with the phase names
// the document used and the action configs as written (compacted).
func (d *Document) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	first := true
	write := func(key, def string, rules []Rule) error {
		if rules == nil {
			return nil
		}
		if key == "" {
			key = def
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		buf.WriteString(strconv.Quote(key))
		buf.WriteByte(':')
		if len(rules) == 0 {
			buf.WriteString("[]")
			return nil
		}
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(rules); err != nil {
			return err
		}
		buf.Truncate(buf.Len() - 1) // Encode's newline
		return nil
	}
	if err := write(d.InboundKey, KeyInbound, d.Inbound); err != nil {
		return nil, err
	}
	if err := write(d.OutboundKey, KeyOutbound, d.Outbound); err != nil {
		return nil, err
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// field is one member of a JSON object, in document order.
type field struct {
	key string
	val json.RawMessage
}

var errNotObject = errors.New("not an object")

// objectFields splits a JSON object into its members in order, refusing
// duplicate keys. When top is set, trailing data after the object is an
// error.
func objectFields(data []byte, top bool) ([]field, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errNotObject
	}
	var out []field
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errNotObject
		}
		if seen[key] {
			return nil, fmt.Errorf("duplicate key %q", key)
		}
		seen[key] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		out = append(out, field{key: key, val: raw})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if top {
		if _, err := dec.Token(); err != io.EOF {
			return nil, errors.New("unexpected data after the object")
		}
	}
	return out, nil
}

// arrayElems splits a JSON array into its raw elements.
func arrayElems(data []byte) ([]json.RawMessage, error) {
	var elems []json.RawMessage
	if err := json.Unmarshal(data, &elems); err != nil {
		return nil, err
	}
	if elems == nil {
		return nil, errors.New("not an array")
	}
	return elems, nil
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

// jsonErrMsg turns a JSON decoding error into a short lowercase message.
func jsonErrMsg(err error) string {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("invalid JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: "))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected end of JSON"
	case errors.Is(err, errNotObject):
		return "not a JSON object"
	default:
		return strings.TrimPrefix(err.Error(), "json: ")
	}
}
