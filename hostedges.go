package edgeplane

import (
	"context"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/store"
)

// listHTTPSEdges is [Host.ListHTTPSEdges]: one page of the store's query
// of HTTPS edges across accounts, paged as [Host.ListAccounts] is.
func (s *Service) listHTTPSEdges(ctx context.Context, opts ListOptions) ([]EdgeRef, string, error) {
	limit := opts.Limit
	switch {
	case limit == 0:
		limit = MaxPageSize
	case limit < 1 || limit > MaxPageSize:
		return nil, "", apierr.Invalidf("limit", "must be between 1 and %d, got %d", MaxPageSize, limit)
	}
	recs, err := s.store.List(ctx, store.Query{Kind: KindHTTPSEdge, BeforeID: opts.BeforeID, Limit: limit + 1})
	if err != nil {
		return nil, "", s.storeErr(err, httpsEdgeKind, "")
	}
	out := make([]EdgeRef, 0, min(len(recs), limit))
	next := ""
	for i, rec := range recs {
		if i == limit {
			next = recs[limit-1].ID
			break
		}
		out = append(out, EdgeRef{AccountID: rec.AccountID, ID: rec.ID})
	}
	return out, next, nil
}
