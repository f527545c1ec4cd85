//go:build !linux

package prefault

import (
	"errors"
	"fmt"
)

// Heap populates the pages the runtime maps for the Go heap: on Linux
// only (see the package doc).
type Heap struct{}

// New returns an error wrapping [errors.ErrUnsupported]: this system has
// no MADV_POPULATE_WRITE.
func New() (*Heap, error) {
	return nil, fmt.Errorf("prefault: Linux only: %w", errors.ErrUnsupported)
}

// Step does nothing.
func (h *Heap) Step() (int, error) { return 0, nil }
