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
package records
