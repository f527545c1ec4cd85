// Package backends holds edgeplane's tunnel group backends and the online
// tunnels they select: the [TunnelGroupBackend] and [Tunnel] models, their
// parameters with validation, the label rules ([ValidateLabels]), the
// upstream address of a tunnel ([CheckForwardsTo]) and the selection rule
// ([Selects]).
//
// The package is a leaf: it holds models and pure logic. Storage,
// identifiers, URIs, timestamps, authtoken checks and the computation of a
// backend's tunnels belong to the edgeplane Service. URI fields, including
// those of Refs, are stored empty and filled by the Service when it returns
// a resource.
//
// # Labels
//
// A backend names labels (key to value); a tunnel carries labels. Both
// follow the same rules, checked by [ValidateLabels]:
//
//   - at most [MaxLabels] (32) labels; a larger set fails with one
//     violation of "labels" and its labels are not examined;
//   - a key is 1 to [MaxLabelKeyBytes] (63) bytes, a value 1 to
//     [MaxLabelValueBytes] (255) bytes;
//   - keys and values are made of ASCII letters, digits and the characters
//     "." "_" "-" "/" ":", the character set of a credential's label bind
//     rules (bind:<key>=<value>), so that every label a backend can name
//     is one an authtoken can be permitted to bind.
//
// Every broken rule is reported at once; a violation names its field
// labels["key"], the key quoted as a Go string literal (shortened to 80
// bytes of the key), and violations are sorted by key.
//
// # Selection
//
// A backend selects a tunnel when every one of the backend's labels is
// among the tunnel's labels with the same value ([Selects]); the tunnel may
// carry more labels. Keys and values compare case-sensitively.
//
// # Decisions where the specification is silent
//
//   - A backend must have at least one label, on create and when an update
//     replaces its labels: an empty label set would select every tunnel of
//     the account, which is never what a backend is for. [Selects] with an
//     empty set selects nothing.
//   - A backend's description is at most 255 bytes and its metadata at most
//     4096 bytes, as for the other resources.
//   - An update that carries labels replaces the whole set.
//   - Tunnels (tn_) are not in the specification beyond ID and URI. This
//     package gives them an account, a start time, labels and the Ref of the
//     credential whose authtoken registered them; their URI is
//     {base_url}/tunnels/<id>. A tunnel may have no labels.
//   - A tunnel may also say where its agent forwards traffic: forwards_to,
//     optional, an absolute http, https, tcp or tls URL with a host and a
//     port (optional for http and https) and no path beyond "/", user
//     information, query or fragment, at most [MaxForwardsToBytes] bytes
//     ([CheckForwardsTo]); for example http://127.0.0.1:3000 (an HTTPS
//     edge's route sends HTTP requests there) or tcp://127.0.0.1:5432 (a
//     TCP or TLS edge sends the connection's bytes there). It is stored
//     as given and shown in tunnel responses, "" when the agent did not
//     say. A data plane that routes a backend's traffic reads it from the
//     tunnels the backend selects.
//   - A tunnel is online under a lease: expires_at is when it ends unless
//     the tunnel server renews it. An expired tunnel is offline at once
//     ([Tunnel.Expired]): no backend selects it, and it is removed.
package backends
