// Package layering holds the tests that keep the module's seams running
// one way (issue 42): the runtime parts (proxy, tunnel, hop, certmanager,
// acmedns, webhook) compile without the root package, each declaring the
// interface it consumes, and the packages that do not evaluate traffic
// policies compile without the policy engine; the number of packages
// each one builds and the root package's size are bounded, so that a
// change that pulls the control plane back in, or grows the root, fails
// a test that says so. It has no code.
package layering
