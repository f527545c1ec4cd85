package hosting

import (
	"context"
	"time"
)

// LeaseHost is the Host's role for work that runs on one replica of a
// store (the certificate manager's orders, event delivery): named leases
// acquired, renewed and released.
type LeaseHost struct{ r *Roles }

// AcquireLease takes or renews the lease name for holder, for term from
// now (between 1s and [MaxLeaseTerm]), unless another holder's term has
// not ended: then it returns the lease as it stands, Held false. A
// holder renews by calling it again before its term ends; the lease
// keeps its Since. See [Lease] for the guarantee. name is at most
// [MaxLeaseName] bytes of a-z, 0-9, '_', '-' and '.'; holder at most
// [MaxLeaseHolder] bytes of UTF-8.
func (h *LeaseHost) AcquireLease(ctx context.Context, name, holder string, term time.Duration) (*Lease, error) {
	return h.r.c.Leases.Acquire(ctx, name, holder, term)
}

// ReleaseLease lets lease name go if holder holds it, so that the next
// [LeaseHost.AcquireLease] of another holder takes it at once; otherwise it
// does nothing.
func (h *LeaseHost) ReleaseLease(ctx context.Context, name, holder string) error {
	return h.r.c.Leases.Release(ctx, name, holder)
}
