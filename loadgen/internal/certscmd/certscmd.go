// Package certscmd owns `loadgen certs`: it makes sure the lab's CA and
// server certificate exist and are valid (internal/tlscert), making them
// on first use, and prints the server certificate's fingerprint as a
// compose variable (TLS_CERT_SHA256=...), which scripts/stack.sh sets
// before compose up so that a new certificate recreates the proxies.
package certscmd

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"proxybench/internal/tlscert"
	"proxybench/loadgen/internal/cmdflags"
)

// Main is `loadgen certs`.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, log *slog.Logger) int {
	return run(args, stdout, stderr, time.Now())
}

func run(args []string, stdout, stderr io.Writer, now time.Time) int {
	fs := flag.NewFlagSet("loadgen certs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: loadgen certs [-dir DIR] [-key ecdsa|rsa]\n\n"+
			"Makes the lab's CA and the proxies' server certificate in DIR when they are missing, invalid,\n"+
			"close to expiry or of another key algorithm, and reuses them otherwise. Prints\n"+
			"TLS_CERT_SHA256=<fingerprint> on stdout; what it did goes to stderr.\n\n")
		fs.PrintDefaults()
	}
	dir := fs.String("dir", tlscert.DefaultDir, "`directory` of the files (the compose file mounts "+tlscert.DefaultDir+")")
	key := fs.String("key", envOr("TLS_KEY", string(tlscert.ECDSA)), "key `algorithm`: ecdsa (P-256) or rsa (2048 bits); default $TLS_KEY, else ecdsa")
	if rc, ok := cmdflags.Parse(fs, args, stderr); !ok {
		return rc
	}
	alg, err := tlscert.ParseAlgorithm(*key)
	if err != nil {
		fmt.Fprintf(stderr, "loadgen certs: %v\n", err)
		return 2
	}
	res, err := tlscert.Ensure(*dir, alg, now)
	if err != nil {
		fmt.Fprintf(stderr, "loadgen certs: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "TLS_CERT_SHA256=%s\n", res.Fingerprint)
	what := "reused"
	if res.Generated {
		what = "made new (" + res.Reason + ")"
	}
	fmt.Fprintf(stderr, "certs: %s %s CA and server certificate in %s, valid until %s\n",
		what, alg, *dir, res.NotAfter.Format(time.DateOnly))
	return 0
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
