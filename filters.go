package edgeplane

import (
	"context"

	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/filter"
)

// ListEventSourcesMatching is [Service.ListEventSources] with a filter
// (GET /event_subscriptions/{subscription_id}/sources?filter=...): the
// sources expr matches, a CEL expression over obj, the source as the API
// shows it (obj.type, obj.uri; see package [filter]). An empty expr
// matches every source. The list is not paged, so no scan bound applies
// beyond [events.MaxSources].
func (s *Service) ListEventSourcesMatching(ctx context.Context, p Principal, subscriptionID, expr string) (*events.SourceList, error) {
	var match *filter.Filter[events.Source]
	if expr != "" {
		if err := p.check(); err != nil {
			return nil, err
		}
		m, err := filter.Compile[events.Source](s.filters, expr)
		if err != nil {
			return nil, err
		}
		match = m
	}
	list, err := s.ListEventSources(ctx, p, subscriptionID)
	if err != nil || match == nil {
		return list, err
	}
	kept := list.Sources[:0]
	for i := range list.Sources {
		if match.Match(&list.Sources[i]) {
			kept = append(kept, list.Sources[i])
		}
	}
	list.Sources = kept
	return list, nil
}
