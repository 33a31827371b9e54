package build

import (
	"context"
	"testing"
	"time"

	"proxybench/reporter/internal/collect"
)

func TestZZScratch(t *testing.T) {
	run := synthRun("scratch", 5)
	c := startProm(t, run)
	ctx := context.Background()
	t0 := time.Now()
	ws, err := collect.Discover(ctx, c, run.ID, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("discover %d: %v", len(ws), time.Since(t0))
	for _, w := range ws[:3] {
		t0 = time.Now()
		if _, err := collect.Cell(ctx, c, w, true); err != nil {
			t.Fatal(err)
		}
		t.Logf("cell sequential: %v", time.Since(t0))
	}
}

func TestZZScratch2(t *testing.T) {
	run := synthRun("scratch", 5)
	c := startProm(t, run)
	ctx := context.Background()
	ws, _ := collect.Discover(ctx, c, run.ID, time.Now())
	for _, conc := range []int{1, 2, 4, 8} {
		t0 := time.Now()
		sem := make(chan struct{}, conc)
		done := make(chan struct{})
		for _, w := range ws {
			sem <- struct{}{}
			go func() {
				collect.Cell(ctx, c, w, isGo(w.Proxy))
				<-sem
				done <- struct{}{}
			}()
		}
		for range ws {
			<-done
		}
		t.Logf("conc %d: %v", conc, time.Since(t0))
	}
	t0 := time.Now()
	r, _ := Build(ctx, Config{Prom: c, Run: run.ID, RunDir: t.TempDir(), Now: time.Now})
	t.Logf("build: %v (%d cells)", time.Since(t0), len(r.Cells))
}
