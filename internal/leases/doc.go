// Package leases holds the named leases of an edgeplane Service, which
// elect one replica of a store for work that must run once (ordering
// certificates, delivering events): every replica that can do the work
// asks for the lease of its name ([Registry.Acquire]) every so often;
// one holds it until it lets it go ([Registry.Release]) or stops
// renewing it, and then the next to ask takes it. A holder must stop the
// work once it has not renewed its lease for the lease's term: the term
// is the longest two replicas may both believe they hold it, measured on
// their own clocks, so it should exceed the renewal interval by more
// than the clocks may drift.
//
// Leases are the Service's own records (the internal kind [kinds.Lease],
// stored under the pseudo-account "lease", one record per name, whose ID
// is "lease_" and the name): the API does not show them and they report
// no events. The root package builds the [Registry] and serves it as
// LeaseHost.AcquireLease and LeaseHost.ReleaseLease; package internal/elect runs
// work under a lease.
//
// It imports the store contract, the record machinery
// (internal/records), apierr and kinds; never the root package.
package leases
