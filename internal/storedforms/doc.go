// Package storedforms holds the stored forms of the root package's kinds
// (see package internal/records): for each kind, the document type the
// store keeps, which holds no computed field (uri, a backend's tunnels,
// the URIs of references, stored as bare IDs) and names its fields
// independently of the wire, and the functions that save a model to it
// and load one from it, sealing and opening the secrets it holds under
// the Service's sealing key (an OIDC module's client secret, bound to its
// route). Each constructor takes the kind's identity (a *records.Kind),
// which the root declares with the kind's presentation and traits: the
// root is the API, this package is how its records are written down.
// The forms of agents' kinds (sessions, tunnels, endpoints) are package
// internal/agentstate's.
//
// It imports the leaf packages of the models and internal/records; never
// the root.
package storedforms
