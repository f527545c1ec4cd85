package policy

import (
	"net/http"

	"github.com/edgeplane/edgeplane/apierr"
)

// ActionDeny is the deny action: it ends evaluation with a status (HTTP)
// or by closing the connection.
const ActionDeny = "deny"

// resDenied is deny's result field: it ran (enforced or not). An
// extension of the SPEC (issue 19).
const resDenied = "denied"

// denyType is the deny action's registry entry.
var denyType = builtinType{name: ActionDeny, compile: compileDeny,
	results: []ResultField{{Name: resDenied, Type: ResultBool}}}

type denyConfig struct {
	StatusCode *int  `json:"status_code"`
	Enforce    *bool `json:"enforce"`
}

type denyAction struct {
	status  int
	enforce bool
	denied  ResultSlot
}

func compileDeny(c *CompileContext, config []byte) (Action, error) {
	var cfg denyConfig
	if err := c.DecodeConfig(config, &cfg); err != nil {
		return nil, err
	}
	var vs apierr.Violations
	if c.Target() == TargetConnection && cfg.StatusCode != nil {
		vs.Add("config.status_code", "a TLS/TCP connection policy denies by closing the connection; status_code applies to HTTP policies only")
	}
	a := &denyAction{status: statusCode(&vs, cfg.StatusCode, http.StatusForbidden, 400, 599), enforce: cfg.Enforce == nil || *cfg.Enforce}
	if err := resultSlots(c, map[string]*ResultSlot{resDenied: &a.denied}); err != nil {
		return nil, err
	}
	return a, vs.Err()
}

// Run ends evaluation with the status, unless enforce is off (shadow
// mode): then it only sets actions.service.deny.denied.
func (a *denyAction) Run(r *RunContext) {
	r.SetBool(a.denied, true)
	if a.enforce {
		r.Respond(a.status, nil, "")
	}
}

// AlwaysTerminates is true unless enforce is off.
func (a *denyAction) AlwaysTerminates() bool { return a.enforce }
