package netlab

import (
	"testing"

	"github.com/cilium/ebpf"
)

func TestZZDropRateExperiment(t *testing.T) {
	needRoot(t)
	d, err := LoadDropper()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.SetLoss(0.01); err != nil {
		t.Fatal(err)
	}
	pkt := make([]byte, 64)
	for i := 0; i < 5; i++ {
		if _, err := d.prog.Run(&ebpf.RunOptions{Data: pkt, Repeat: 2000000}); err != nil {
			t.Fatal(err)
		}
	}
	c, _ := d.Counters()
	lo, hi := WilsonInterval(c.DropSkbs, c.SeenSkbs, Z99)
	t.Logf("seen %d dropped %d ratio %.5f%% [%.5f, %.5f]", c.SeenSkbs, c.DropSkbs, 100*c.DropRatio(), 100*lo, 100*hi)
}
