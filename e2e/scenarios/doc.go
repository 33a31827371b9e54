// Package scenarios holds the end-to-end checks of the scenarios (docs/scenarios.md):
// each scenario runs through `loadgen run` against the live stack for every
// proxy that supports it, at a short duration, and the test asserts what
// makes the scenario itself correct, from the run's manifest.json: 401s
// exactly for invalid keys, the accepted rate within 10 % of the configured
// limit, the origin delay recovered in the latency, bytes/s consistent with
// body size x requests/s, connections/s and TIME_WAIT recorded for churn,
// over TLS the protocol, version and cipher negotiated, handshakes resumed
// exactly where they should be with each kind's exact latency recorded, no
// certificate error and every HTTP/2 payload body whole, and n/a cells
// exactly where the support matrix says so.
//
// Run with the stack up (make up):
//
//	go test -tags e2e -count=1 ./e2e/scenarios/
//
// It takes the stack lock (.cache/stack.lock) while sending load so it
// never overlaps another benchmark on the same stack.
package scenarios
