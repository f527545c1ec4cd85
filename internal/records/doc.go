// Package records is the record machinery of the edgeplane Service: how
// a kind of resource is stored (a [Form]: the conversion between the
// model the API shows and the document the store keeps), and the generic
// operations on records of any kind, for a principal ([Get], [Create],
// [Update], [Remove], [List], [ListAs], [ListEncoded], [AppendJSON]),
// for the host ([HostList]), and under a cap on a parent's children
// ([CreateInSlot], [ListCapped]). They check the principal and IDs, label
// writes with their events, go through the record cache (package
// recordcache) and map store errors to the API's ([DB.StoreErr]).
//
// # Stored documents
//
// Stored documents are not the API's JSON. Each kind has a document type
// beside its root file: the fields the kind persists, under storage names
// that are the document's own json tags. A document holds no computed
// field (uri, a backend's tunnels, the URIs of Refs: a reference is
// stored as the bare ID), no ID (the record's ID is the resource's) and
// no secret in the clear (secrets are sealed with [DB.Sealer]). Renaming a
// wire field changes a model's json tag, not a document: it is never a
// data migration.
//
// # Lists
//
// A page of [ListAs] or [ListEncoded] on a store that is a
// [store.VersionLister] ([DB].Versions), while the record cache is in
// use, reads from the store the page's IDs and versions
// (ListVersions), takes from the cache every record it holds at the
// listed version (its decoded document, and for ListEncoded its JSON),
// and reads the rest with one GetMany, which it caches. A page whose
// records are all cached reads no document from the store. A filtered
// list does this chunk by chunk (a first chunk of the page's size, then
// doubling up to [MaxPageSize]), so it reads only the records it scans,
// at most [MaxFilterScan]. Taking an entry only at the version the store
// listed makes the fence of reads by ID ([DB].Fence) unneeded: the
// version comes from the store, after every write acknowledged before
// the list began. A record deleted between the two reads is left out of
// the page (a page of values reads on to fill itself). Without a
// VersionLister, or with the cache off or not current, a page is one
// List, whose records' cached documents are reused at their versions.
package records
