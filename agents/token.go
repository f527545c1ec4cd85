package agents

// TokenPurpose says what an agent's resume token resumes: the agent
// protocol hands an agent opaque values that it sends back when it
// reconnects, the session's cookie (with the session ID it had) and each
// endpoint's bind token (with the endpoint's ID).
type TokenPurpose string

// The purposes of agents' resume tokens.
const (
	// TokenSession is the cookie of a tunnel session.
	TokenSession TokenPurpose = "tunnel_session"
	// TokenEndpoint is the bind token of an endpoint.
	TokenEndpoint TokenPurpose = "endpoint"
)

// Noun is the purpose in words: "session" or "endpoint".
func (p TokenPurpose) Noun() string {
	if p == TokenEndpoint {
		return "endpoint"
	}
	return "session"
}
