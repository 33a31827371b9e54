// Command pbhealth is the healthcheck probe mounted into every container of
// the stack: a static binary that works the same in Debian, Alpine and
// scratch images, so healthchecks never depend on curl or wget being there.
//
//	pbhealth URL   exits 0 when GET URL answers 2xx within 2 s
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

func run(args []string, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: pbhealth URL")
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, args[0], nil)
	if err != nil {
		fmt.Fprintf(stderr, "pbhealth: bad URL %q: %v\n", args[0], err)
		return 2
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "pbhealth: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode/100 != 2 {
		fmt.Fprintf(stderr, "pbhealth: %s answered %s\n", args[0], resp.Status)
		return 1
	}
	return 0
}
