package agents

import "github.com/edgeplane/edgeplane/apierr"

// Defaults of [Limits].
const (
	DefaultSessionsPerCredential = 50
	DefaultSessionsPerAccount    = 200
	DefaultTunnelsPerAccount     = 1000
	DefaultEndpointsPerAccount   = 1000
)

// MaxLimit is the largest value of a field of [Limits]: a session,
// tunnel or endpoint opened under a limit of n reads the records that
// count toward it (at most n) to find its place.
const MaxLimit = 10_000

// Limits bound what the agents of one account hold at once, across every
// tunnel server (edge node) of the store: the store holds the count, so
// each limit holds exactly under concurrent opens and binds on any number
// of nodes. A zero field means its default; a negative one, no limit. A
// session, tunnel or endpoint that would go past a limit is refused with
// ResourceExhausted (ERR_SERVICE_106), in words that name the limit;
// closing one frees its place at once, and a node that dies frees its
// places when its lease ends (its records are reaped). Labeled tunnels
// registered by the host (edgeplane admin register-tunnel) do not count.
type Limits struct {
	// SessionsPerCredential bounds the agent sessions one authtoken
	// holds. Default [DefaultSessionsPerCredential].
	SessionsPerCredential int
	// SessionsPerAccount bounds the agent sessions of all the account's
	// credentials. Default [DefaultSessionsPerAccount].
	SessionsPerAccount int
	// TunnelsPerAccount bounds the labeled tunnels the account's agents
	// hold. Default [DefaultTunnelsPerAccount].
	TunnelsPerAccount int
	// EndpointsPerAccount bounds the endpoints the account's agents
	// bind. Default [DefaultEndpointsPerAccount].
	EndpointsPerAccount int
}

// Validate fails, naming the field, when one is above [MaxLimit].
func (l Limits) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"SessionsPerCredential", l.SessionsPerCredential}, {"SessionsPerAccount", l.SessionsPerAccount},
		{"TunnelsPerAccount", l.TunnelsPerAccount}, {"EndpointsPerAccount", l.EndpointsPerAccount}} {
		if f.v > MaxLimit {
			return apierr.Invalidf(f.name, "must be at most %d (or 0 for the default, or negative for no limit), got %d", MaxLimit, f.v)
		}
	}
	return nil
}

// WithDefaults returns l with each zero field set to its default.
func (l Limits) WithDefaults() Limits {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&l.SessionsPerCredential, DefaultSessionsPerCredential)
	def(&l.SessionsPerAccount, DefaultSessionsPerAccount)
	def(&l.TunnelsPerAccount, DefaultTunnelsPerAccount)
	def(&l.EndpointsPerAccount, DefaultEndpointsPerAccount)
	return l
}
