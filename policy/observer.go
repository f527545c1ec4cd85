package policy

import "time"

// Observer receives what evaluations do, for metrics: set
// [Options].Observer (the policyprom package has a Prometheus collector
// that is one). Its methods are called on the evaluating goroutine, so
// they must be safe for concurrent use and quick; the strings they get
// are the compiled policy's own (no allocation), and must not be assumed
// to be few: a rule's name is the document's, so a collector should bound
// its label values (policyprom does). With no Observer, evaluation pays
// nothing.
type Observer interface {
	// RuleMatched is called when a rule applies (all its expressions are
	// true), before its actions run.
	RuleMatched(r RuleEvent)
	// ActionRan is called after each action that ran.
	ActionRan(a ActionEvent)
	// Evaluated is called at the end of every evaluation of Inbound,
	// Outbound and Connect of a phase that has rules.
	Evaluated(e EvaluationEvent)
}

// RuleEvent describes a rule that applied.
type RuleEvent struct {
	// Phase is the phase evaluated.
	Phase Phase
	// Rule is the rule's name, "" when it has none.
	Rule string
	// Location is the rule's place in the document, for example
	// "on_http_request[2]".
	Location string
}

// ActionEvent describes an action that ran.
type ActionEvent struct {
	// Phase is the phase evaluated.
	Phase Phase
	// Type is the action type, for example "rate-limit".
	Type string
	// Rule is the name of the action's rule, "" when it has none.
	Rule string
	// Location is the action's place in the document, for example
	// "on_http_request[2].actions[0]".
	Location string
}

// EvaluationEvent describes one evaluation.
type EvaluationEvent struct {
	// Target and Phase say what was evaluated (a connection policy's
	// Connect is TargetConnection, Inbound).
	Target Target
	Phase  Phase
	// Verdict is the result's.
	Verdict Verdict
	// Duration is how long the evaluation took, by the monotonic clock.
	Duration time.Duration
}
