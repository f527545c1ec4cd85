package edgeplane

import (
	"context"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/store"
)

// listHTTPSEdges is [Host.ListHTTPSEdges]: one page of the store's query
// of HTTPS edges across accounts, paged as [Host.ListAccounts] is.
func (s *Service) listHTTPSEdges(ctx context.Context, opts ListOptions) ([]EdgeRef, string, error) {
	return hostList(ctx, s, httpsEdgeKind, opts, edgeRefOf)
}

// listTLSEdges is [Host.ListTLSEdges].
func (s *Service) listTLSEdges(ctx context.Context, opts ListOptions) ([]EdgeRef, string, error) {
	return hostList(ctx, s, tlsEdgeKind, opts, edgeRefOf)
}

// listTCPEdges is [Host.ListTCPEdges].
func (s *Service) listTCPEdges(ctx context.Context, opts ListOptions) ([]EdgeRef, string, error) {
	return hostList(ctx, s, tcpEdgeKind, opts, edgeRefOf)
}

func edgeRefOf(rec store.Record) (EdgeRef, error) {
	return EdgeRef{AccountID: rec.AccountID, ID: rec.ID}, nil
}

// hostList returns one page, newest first, of the records of kind k across
// all accounts, each turned into a T by conv, and the cursor of the next
// page ("" on the last): the paging of the host's list operations.
func hostList[T any](ctx context.Context, s *Service, k kindInfo, opts ListOptions, conv func(store.Record) (T, error)) ([]T, string, error) {
	limit := opts.Limit
	switch {
	case limit == 0:
		limit = MaxPageSize
	case limit < 1 || limit > MaxPageSize:
		return nil, "", apierr.Invalidf("limit", "must be between 1 and %d, got %d", MaxPageSize, limit)
	}
	recs, err := s.store.List(ctx, store.Query{Kind: k.kind, BeforeID: opts.BeforeID, Limit: limit + 1})
	if err != nil {
		return nil, "", s.storeErr(err, k, "")
	}
	out := make([]T, 0, min(len(recs), limit))
	next := ""
	for i, rec := range recs {
		if i == limit {
			next = recs[limit-1].ID
			break
		}
		v, err := conv(rec)
		if err != nil {
			return nil, "", err
		}
		out = append(out, v)
	}
	return out, next, nil
}
