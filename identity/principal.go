package identity

import (
	"net/netip"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/internal/ids"
)

// AccountPrefix starts the identifier of an account.
const AccountPrefix = "acct_"

// Principal is the caller an operation acts for: who is asking and on
// behalf of which account. Transports obtain it from the Service's
// Authenticate.
type Principal struct {
	// AccountID is the caller's account. Every resource the call touches
	// belongs to it.
	AccountID string
	// SubjectID is the user (usr_) or bot (bot_) making the call.
	SubjectID string
	// Admin reports whether the subject is an admin of the account.
	Admin bool
	// ClientIP is the address the call comes from, as its transport saw
	// it (for HTTP: the connection's peer, or the client a trusted
	// proxy's X-Forwarded-For names); the zero Addr when unknown, as for
	// a Go program calling the Service itself. The Service uses it to
	// refuse an IP restriction of type api that would refuse the very
	// request writing it. Authentication leaves it zero: the transport
	// sets it.
	ClientIP netip.Addr
}

// Check fails (unauthenticated) unless p names an account and a user or
// bot: every operation checks it before it reads or writes anything.
func (p Principal) Check() error {
	if !ids.Valid(p.AccountID, AccountPrefix) || !ValidSubjectID(p.SubjectID) {
		return apierr.New(apierr.Unauthenticated, "the call has no valid principal")
	}
	return nil
}
