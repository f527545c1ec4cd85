package hosting

import (
	"context"
	"crypto/ed25519"

	"github.com/edgeplane/edgeplane/agents"
)

// NodeHost is the Host's role for the hop between edge nodes (package
// hop): the store's nodes and the key they derive from the sealing key.
type NodeHost struct{ r *Roles }

// GetNode returns node id, live or with a lease that ended but not yet
// reaped (see its ExpiresAt); one that is gone is not found.
func (h *NodeHost) GetNode(ctx context.Context, id string) (*agents.Node, error) {
	return h.r.c.Nodes.Get(ctx, id)
}

// ListNodes returns every registered node, newest first.
func (h *NodeHost) ListNodes(ctx context.Context) ([]agents.Node, error) {
	return h.r.c.Nodes.List(ctx)
}

// NodeKey returns the Ed25519 private key every node of the store
// derives from the sealing key ([github.com/edgeplane/edgeplane.Options.SealingKey], HKDF): the nodes
// authenticate each other with it on the hop between them (package
// hop), so that only servers holding the store's sealing key can use
// the hop.
func (h *NodeHost) NodeKey() ed25519.PrivateKey { return h.r.c.Nodes.Key() }
