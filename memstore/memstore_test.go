package memstore_test

import (
	"testing"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) edgeplane.Store { return memstore.New() })
}
