// Command gen writes the proxybench dashboards (package dashgen) as the JSON
// files Grafana provisions: `go run ./grafana/gen` from the repository root.
// The files are committed; grafana/dashcheck fails when they are stale.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"proxybench/grafana/dashgen"
	"proxybench/internal/atomicfile"
)

func main() { os.Exit(run(context.Background(), os.Args[1:], os.Stderr)) }

func run(_ context.Context, args []string, stderr io.Writer) int {
	log := slog.New(slog.NewTextHandler(stderr, nil))
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "grafana/dashboards", "directory the dashboard JSON files are written to")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := write(*out); err != nil {
		log.Error("generate dashboards", "err", err)
		return 1
	}
	return 0
}

func write(dir string) error {
	boards, err := dashgen.All()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	for _, b := range boards {
		data, err := dashgen.Marshal(b.Dashboard)
		if err != nil {
			return err
		}
		if err := atomicfile.WriteFile(filepath.Join(dir, b.File), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
