package memstore_test

import (
	"github.com/edgeplane/edgeplane/store"
	"testing"

	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return memstore.New() })
}
