// Package e2e holds the end-to-end assertions that `make test` runs after a
// real quick bench through the real stack (scripts/e2e.sh). The tests read
// the run's report.json and manifest.json as a user would, with their own
// decoding, so a change to the reporter's schema that breaks users breaks
// these tests too.
package e2e
