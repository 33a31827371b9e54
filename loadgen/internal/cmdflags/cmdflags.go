// Package cmdflags owns what the loadgen's flag-only subcommands share in
// reading their command line: -h prints the usage and exits 0, a bad flag
// or any argument that is not a flag exits 2; a comma-separated value is
// a list (List).
package cmdflags

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// List is a comma-separated flag value's items, each trimmed, empty ones
// left out ("nginx, caddy," is nginx and caddy; "" is none).
func List(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// Parse parses args into fs, which takes flags only. ok is false when the
// command must end now with exit code rc: 0 after -h, 2 on a bad flag or
// an unexpected argument (said on stderr).
func Parse(fs *flag.FlagSet, args []string, stderr io.Writer) (rc int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return 2, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q: it takes only flags\n", fs.Name(), fs.Arg(0))
		return 2, false
	}
	return 0, true
}
