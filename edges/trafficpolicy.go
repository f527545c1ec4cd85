package edges

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/edgeplane/edgeplane/apierr"
)

// MaxTrafficPolicyBytes bounds a traffic policy module's value.
const MaxTrafficPolicyBytes = 128 << 10

// Validate reports the broken rules of p that need no policy engine: value
// is required and at most [MaxTrafficPolicyBytes] bytes. The document
// itself is checked by the Service, which compiles it. It returns nil or
// an InvalidArgument [*apierr.Error].
func (p TrafficPolicyParams) Validate() error {
	var vs apierr.Violations
	switch {
	case p.Value == "":
		vs.Add("value", "is required: a traffic policy document as a JSON string")
	case len(p.Value) > MaxTrafficPolicyBytes:
		vs.Add("value", "must be at most %d bytes, got %d", MaxTrafficPolicyBytes, len(p.Value))
	}
	return vs.Err()
}

// CheckPolicyShape checks that value is a traffic policy document of the
// shape SPEC 2.7 documents, without compiling it: a JSON object with an
// inbound list of rules; each rule an object with an optional name
// (string), optional expressions (list of strings) and actions (a
// non-empty list of objects with a non-empty type string and an optional
// config object). Unknown keys are refused. It returns the document
// re-serialized compactly (json.Compact: key order kept) or an
// InvalidArgument [*apierr.Error] whose violations are located under
// "value" (value.inbound[0].actions[1].type).
func CheckPolicyShape(value string) (string, error) {
	var vs apierr.Violations
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(value), &top); err != nil || top == nil {
		vs.Add("value", "must be a JSON object (a traffic policy document)")
		return "", vs.Err()
	}
	for k, raw := range top {
		if k != "inbound" {
			vs.Add("value."+k, "unknown key; a TLS edge traffic policy has only inbound rules")
			continue
		}
		var rules []json.RawMessage
		if err := json.Unmarshal(raw, &rules); err != nil {
			vs.Add("value.inbound", "must be a list of rules")
			continue
		}
		for i, r := range rules {
			checkRuleShape(&vs, "value.inbound["+strconv.Itoa(i)+"]", r)
		}
	}
	if err := vs.Err(); err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(value)); err != nil {
		return "", apierr.Invalidf("value", "must be valid JSON")
	}
	return buf.String(), nil
}

func checkRuleShape(vs *apierr.Violations, path string, raw json.RawMessage) {
	var rule map[string]json.RawMessage
	if err := json.Unmarshal(raw, &rule); err != nil || rule == nil {
		vs.Add(path, "rule must be an object with name, expressions and actions")
		return
	}
	for k, v := range rule {
		switch k {
		case "name":
			var s string
			if json.Unmarshal(v, &s) != nil {
				vs.Add(path+".name", "must be a string")
			}
		case "expressions":
			var list []json.RawMessage
			if json.Unmarshal(v, &list) != nil {
				vs.Add(path+".expressions", "must be a list of strings")
				continue
			}
			for i, e := range list {
				var s string
				if json.Unmarshal(e, &s) != nil || s == "" {
					vs.Add(path+".expressions["+strconv.Itoa(i)+"]", "must be a non-empty string")
				}
			}
		case "actions":
		default:
			vs.Add(path+"."+k, "unknown key; a rule has name, expressions and actions")
		}
	}
	var actions []json.RawMessage
	if json.Unmarshal(rule["actions"], &actions) != nil || len(actions) == 0 {
		vs.Add(path+".actions", "must be a non-empty list of actions")
		return
	}
	for i, a := range actions {
		ap := path + ".actions[" + strconv.Itoa(i) + "]"
		var act map[string]json.RawMessage
		if json.Unmarshal(a, &act) != nil || act == nil {
			vs.Add(ap, "action must be an object with type and config")
			continue
		}
		var typ string
		if json.Unmarshal(act["type"], &typ) != nil || typ == "" {
			vs.Add(ap+".type", "is required: the action type, such as deny or log")
		}
		for k, v := range act {
			switch k {
			case "type":
			case "config":
				var cfg map[string]json.RawMessage
				if json.Unmarshal(v, &cfg) != nil {
					vs.Add(ap+".config", "must be an object")
				}
			default:
				vs.Add(ap+"."+k, "unknown key; an action has type and config")
			}
		}
	}
}
