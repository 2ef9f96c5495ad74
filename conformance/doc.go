// Package conformance runs the test vectors of the drafts memtrail
// implements, and of independent implementations, through memtrail's
// public receipt and key paths. The vectors sit in vectors/, each folder
// with the SOURCES note that names its origin, commit and licence; "go test
// ./conformance" (part of "make test") runs them and logs a line per suite.
//
// The suites whose checks need the log's or the verifier's internals run in
// those packages' tests, from the same folder: docs/conformance.md lists
// every suite, where it runs and its result.
package conformance
