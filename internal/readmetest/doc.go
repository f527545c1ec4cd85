// Package readmetest keeps the documentation's shell examples working: its
// tests run the README's "Try it" block as written (with the built
// binaries, in a temporary directory, on free ports), check that every
// shell example of README.md and docs/ parses with bash -n, and run the
// examples of docs/ that are self-contained. It has no code of its own.
package readmetest
