package policy

import "github.com/edgeplane/edgeplane/apierr"

// ActionLog is the log action: it sends a [LogEntry] with templated
// metadata to the [Sink].
const ActionLog = "log"

// logType is the log action's registry entry.
var logType = builtinType{name: ActionLog, compile: compileLog}

type logConfig struct {
	Metadata map[string]string `json:"metadata"`
}

type logAction struct {
	keys []string
	vals []*Template
}

func compileLog(c *CompileContext, config []byte) (Action, error) {
	var cfg logConfig
	if err := c.DecodeConfig(config, &cfg); err != nil {
		return nil, err
	}
	var vs apierr.Violations
	if len(cfg.Metadata) > maxHeaderEntries {
		vs.Add("config.metadata", "has %d entries; at most %d are allowed", len(cfg.Metadata), maxHeaderEntries)
	}
	a := &logAction{}
	for _, k := range sortedKeys(cfg.Metadata) {
		f := headerField("config.metadata", k)
		if k == "" {
			vs.Add(f, "a metadata key may not be empty")
		}
		a.keys = append(a.keys, k)
		a.vals = append(a.vals, c.c.template(&vs, f, cfg.Metadata[k], -1))
	}
	return a, vs.Err()
}

func (a *logAction) Run(r *RunContext) {
	md := make(map[string]string, len(a.keys))
	for i, k := range a.keys {
		md[k] = r.Render(a.vals[i])
	}
	r.Log(md)
}
