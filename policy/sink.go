package policy

import (
	"context"
	"log/slog"
	"sort"
	"time"
)

// Sink receives what evaluation reports: entries of the log action and
// runtime errors. It is called synchronously from the evaluating goroutine,
// possibly from many goroutines at once, so it must be safe for concurrent
// use and should not block.
type Sink interface {
	// Log receives one entry of a log action.
	Log(e LogEntry)
	// Error receives a runtime error: an expression that failed to evaluate
	// (its rule did not apply), a template that failed to render or was
	// truncated, or an action that could not do its work.
	Error(e *EvalError)
}

// LogEntry is what a log action produces.
type LogEntry struct {
	// Time is the evaluation time (the request's, or the Engine's clock).
	Time time.Time
	// Location is the action's place in the document, for example
	// "inbound[2].actions[0]".
	Location string
	// Rule is the rule's name, possibly empty.
	Rule string
	// Metadata holds the rendered metadata of the action's config.
	Metadata map[string]string
}

// EvalError is a runtime error reported to the [Sink]. Evaluation goes on
// after it: see the package doc, section Runtime errors.
type EvalError struct {
	// Time is the evaluation time.
	Time time.Time
	// Location is where the error happened, for example
	// "inbound[0].expressions[1]" or "outbound[1].actions[0].config.body".
	Location string
	// Rule is the rule's name, possibly empty.
	Rule string
	// Err is the cause, for example a CEL "no such key" error.
	Err error
}

// Error formats the error as "location: cause", naming the rule if it has a
// name.
func (e *EvalError) Error() string {
	s := e.Location
	if e.Rule != "" {
		s += " (rule " + quote(e.Rule) + ")"
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *EvalError) Unwrap() error { return e.Err }

// NewSlogSink returns a [Sink] that writes log entries at level Info and
// runtime errors at level Warn to l. A nil l means [slog.Default] at the time
// of each call. It is the Engine's default sink.
func NewSlogSink(l *slog.Logger) Sink { return slogSink{l} }

type slogSink struct{ l *slog.Logger }

func (s slogSink) logger() *slog.Logger {
	if s.l != nil {
		return s.l
	}
	return slog.Default()
}

func (s slogSink) Log(e LogEntry) {
	keys := make([]string, 0, len(e.Metadata))
	for k := range e.Metadata {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	md := make([]any, 0, len(keys))
	for _, k := range keys {
		md = append(md, slog.String(k, e.Metadata[k]))
	}
	s.logger().LogAttrs(context.Background(), slog.LevelInfo, "traffic policy log",
		slog.String("location", e.Location), slog.String("rule", e.Rule), slog.Group("metadata", md...))
}

func (s slogSink) Error(e *EvalError) {
	s.logger().LogAttrs(context.Background(), slog.LevelWarn, "traffic policy runtime error",
		slog.String("location", e.Location), slog.String("rule", e.Rule), slog.String("error", e.Err.Error()))
}
