package records

import (
	"strings"
	"unicode/utf8"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/store"
)

// Kind is what every table knows of one kind of record: its store kind,
// ID prefix, collection, noun and event name. IDs (Prefix), URIs
// (Collection), messages (Noun) and event types (Event) are all derived
// from it.
type Kind struct {
	// StoreKind is the store kind of the records.
	StoreKind store.Kind
	// Prefix starts the IDs of the records ("cr_").
	Prefix string
	// Collection is the path of the kind's collection below the base URL
	// ("credentials"); for a nested kind, below its parent's URI
	// ("routes").
	Collection string
	// Noun names the kind in messages ("IP policy").
	Noun string
	// Event is the name the kind's changes are reported under
	// ("ip_policy": ip_policy_created.v0 ...); "" for a kind that reports
	// no changes.
	Event string
	// Parent is the kind of the records' ParentID, when they have one.
	Parent *Kind
	// Nested says that the URI is {parent URI}/{Collection}/{id}.
	Nested bool
}

// Path returns the collection path of the kind below the base URL, for a
// record whose parent is parentID.
func (k *Kind) Path(parentID string) string {
	if k.Nested {
		return k.Parent.Collection + "/" + parentID + "/" + k.Collection
	}
	return k.Collection
}

// EventType returns the event type of the change verb (see package
// events), "" when the kind reports no changes.
func (k *Kind) EventType(verb string) string {
	if k.Event == "" {
		return ""
	}
	return events.TypeOf(k.Event, verb)
}

// NotFound returns the not-found error of the record id of the kind.
func (k *Kind) NotFound(id string) error {
	return apierr.NotFoundf("%s %s not found", k.Noun, EchoID(id))
}

// maxEchoedID bounds how much of a caller's ID a message repeats: a valid
// ID is at most 36 bytes, so a longer one is shown cut (at a UTF-8
// boundary) and marked, never echoed whole.
const maxEchoedID = 64

// EchoID returns id as a message may repeat it: cut, and marked so, when
// it is longer than any valid ID.
func EchoID(id string) string {
	if len(id) <= maxEchoedID {
		return id
	}
	cut := maxEchoedID
	for cut > 0 && !utf8.RuneStart(id[cut]) {
		cut--
	}
	return id[:cut] + "…"
}

// Kinds is the list of every kind a Service stores.
type Kinds []*Kind

// Of returns the kind of store kind k.
func (ks Kinds) Of(k store.Kind) (*Kind, bool) {
	for _, ki := range ks {
		if ki.StoreKind == k {
			return ki, true
		}
	}
	return nil, false
}

// Describe returns "IP policy ipp_…" for an ID with a known prefix, the
// ID alone otherwise.
func (ks Kinds) Describe(id string) string {
	best, noun := "", ""
	for _, k := range ks {
		if strings.HasPrefix(id, k.Prefix) && len(k.Prefix) > len(best) {
			best, noun = k.Prefix, k.Noun
		}
	}
	if noun == "" {
		return id
	}
	return noun + " " + id
}

// DescribeAll is Describe of each ID, joined by ", ".
func (ks Kinds) DescribeAll(list []string) string {
	out := make([]string, len(list))
	for i, id := range list {
		out[i] = ks.Describe(id)
	}
	return strings.Join(out, ", ")
}
