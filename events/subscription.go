package events

import (
	"slices"
	"strconv"
	"time"

	"github.com/edgeplane/edgeplane/apierr"

	"github.com/edgeplane/edgeplane/internal/ids"
	"github.com/edgeplane/edgeplane/internal/validate"
	"github.com/edgeplane/edgeplane/resource"
)

// Identifier prefixes.
const (
	// SubscriptionPrefix starts every event subscription identifier.
	SubscriptionPrefix = "esb_"
	// EventPrefix starts every event identifier.
	EventPrefix = "ev_"
	// SourcePrefix starts the internal identifier of a stored source. The
	// API never shows it: it addresses a source by its subscription and
	// type.
	SourcePrefix = "evs_"
)

// MaxSources is the most sources one subscription may have.
const MaxSources = MaxTypes

// MaxCreateSources is the most sources a subscription may be created
// with; more are added one at a time (each is one write).
const MaxCreateSources = 100

// maxSuggestions bounds how many unknown types of one request get a
// closest-type suggestion, each a search of the whole registry.
const maxSuggestions = 5

// Subscription is an event subscription: it triggers for the event types
// of its [Source]s. The specification does not show its fields; this is
// the minimal shape.
type Subscription struct {
	// ID is the subscription's identifier, SubscriptionPrefix followed by
	// an opaque string.
	ID string `json:"id"`
	// URI locates the subscription, {base_url}/event_subscriptions/<id>;
	// filled by the Service.
	URI string `json:"uri"`
	// CreatedAt is when the subscription was created.
	CreatedAt time.Time `json:"created_at"`
	// Description says what the subscription is for.
	Description string `json:"description"`
	// Metadata is arbitrary user-defined machine-readable data.
	Metadata string `json:"metadata"`
	// Sources are the subscription's sources, ordered by type; filled by
	// the Service from the source records, never nil in responses.
	Sources []Source `json:"sources"`
	// Destinations are the event destinations the subscription's events
	// are sent to; never nil in responses.
	Destinations []resource.Ref `json:"destinations"`
}

// CreateSubscriptionParams are the parameters of creating an event
// subscription. Every field is optional.
type CreateSubscriptionParams struct {
	// Description is at most 255 bytes.
	Description string `json:"description" validate:"maxbytes=255"`
	// Metadata is at most 4096 bytes.
	Metadata string `json:"metadata" validate:"maxbytes=4096"`
	// Sources are added to the new subscription: at most
	// [MaxCreateSources], each a known event type listed once.
	Sources []CreateSourceParams `json:"sources"`
	// DestinationIDs are the event destinations (of the account) the
	// subscription's events are sent to: at most
	// [MaxSubscriptionDestinations], each listed once.
	DestinationIDs []string `json:"destination_ids" validate:"max=10,unique,dive,required,maxbytes=64"`
}

// Validate reports every broken rule of p, the sources' under
// sources[i].type, with the registry of known event types reg. It returns
// nil or an InvalidArgument [*apierr.Error].
func (p CreateSubscriptionParams) Validate(reg *Registry) error {
	var vs apierr.Violations
	validate.Into(&vs, "", p)
	checkDestinationIDs(&vs, p.DestinationIDs)
	if len(p.Sources) > MaxCreateSources {
		vs.Add("sources", "must list at most %d sources, got %d; add more one at a time", MaxCreateSources, len(p.Sources))
		return vs.Err()
	}
	suggested := 0
	for i, src := range p.Sources {
		field := "sources[" + strconv.Itoa(i) + "]"
		known := reg.Known(src.Type)
		switch problem := typeProblem(src.Type); {
		case problem != "":
			vs.Add(field+".type", "%s", problem)
		case !known && suggested < maxSuggestions:
			suggested++
			vs.AddError(field, reg.Check(src.Type)) // names the closest known type
		case !known:
			vs.Add(field+".type", "unknown event type %q", src.Type)
		default:
			if j := slices.IndexFunc(p.Sources[:i], func(o CreateSourceParams) bool { return o.Type == src.Type }); j >= 0 {
				vs.Add(field+".type", "duplicates sources[%d]; list each type once", j)
			}
		}
	}
	return vs.Err()
}

// UpdateSubscriptionParams are the parameters of updating an event
// subscription; nil fields are left unchanged.
type UpdateSubscriptionParams struct {
	// Description replaces the description; at most 255 bytes.
	Description *string `json:"description" validate:"omitnil,maxbytes=255"`
	// Metadata replaces the metadata; at most 4096 bytes.
	Metadata *string `json:"metadata" validate:"omitnil,maxbytes=4096"`
	// DestinationIDs replaces the destinations: at most
	// [MaxSubscriptionDestinations], each listed once.
	DestinationIDs *[]string `json:"destination_ids" validate:"omitnil,max=10,unique,dive,required,maxbytes=64"`
}

// Validate reports every broken rule of p. It returns nil or an
// InvalidArgument [*apierr.Error].
func (p UpdateSubscriptionParams) Validate() error {
	var vs apierr.Violations
	validate.Into(&vs, "", p)
	if p.DestinationIDs != nil {
		checkDestinationIDs(&vs, *p.DestinationIDs)
	}
	return vs.Err()
}

// checkDestinationIDs adds a violation of destination_ids[i] for each
// entry that is not an event destination ID.
func checkDestinationIDs(vs *apierr.Violations, list []string) {
	for i, id := range list {
		if id != "" && len(id) <= 64 && !ids.Valid(id, DestinationPrefix) {
			vs.Add("destination_ids["+strconv.Itoa(i)+"]", "must be an event destination ID (%s followed by %d base62 characters)", DestinationPrefix, ids.Len)
		}
	}
}

// Apply sets the fields of sub that p carries.
func (p UpdateSubscriptionParams) Apply(sub *Subscription) {
	if p.Description != nil {
		sub.Description = *p.Description
	}
	if p.Metadata != nil {
		sub.Metadata = *p.Metadata
	}
	if p.DestinationIDs != nil {
		sub.Destinations = make([]resource.Ref, len(*p.DestinationIDs))
		for i, id := range *p.DestinationIDs {
			sub.Destinations[i] = resource.Ref{ID: id}
		}
	}
}

// Source is an event source: one event type for which a subscription
// triggers.
type Source struct {
	// Type is the event type, <event_name>.v<N>.
	Type string `json:"type"`
	// URI locates the source,
	// {base_url}/event_subscriptions/<subscription_id>/sources/<type>;
	// filled by the Service.
	URI string `json:"uri"`
}

// CreateSourceParams are the parameters of adding a source to a
// subscription.
type CreateSourceParams struct {
	// Type is required: a known event type of the registry.
	Type string `json:"type" openapi:"required,maxbytes=128"`
}

// Validate reports whether p.Type is a well-formed type known to reg
// (see [Registry.Check]). It returns nil or an InvalidArgument
// [*apierr.Error] with a violation of "type".
func (p CreateSourceParams) Validate(reg *Registry) error { return reg.Check(p.Type) }

// UpdateSourceParams are the parameters of updating a source: the
// specification's update body is the empty object, so there is nothing to
// change. It exists so that the operation has the shape of every other
// update.
type UpdateSourceParams struct{}

// Validate returns nil: an empty object is the only update.
func (UpdateSourceParams) Validate() error { return nil }

// SourceList is the response of listing a subscription's sources.
type SourceList struct {
	// Sources are the subscription's sources, newest first; never nil.
	Sources []Source `json:"sources"`
	// URI is the URI of the list resource,
	// {base_url}/event_subscriptions/<subscription_id>/sources.
	URI string `json:"uri"`
}
