package manifest

import (
	"strings"
	"testing"
)

func TestCeilingNear(t *testing.T) {
	t.Parallel()
	c := &Ceiling{RPS: 10000}
	if why, ok := c.Near("goodput", 8700, CeilingFraction); !ok || !strings.Contains(why, "8700 req/s is 87 %") || !strings.Contains(why, "10000 req/s") {
		t.Errorf("8700 of 10000: %v %q", ok, why)
	}
	if _, ok := c.Near("goodput", 8000, CeilingFraction); !ok {
		t.Error("exactly 80 % is near")
	}
	if _, ok := c.Near("goodput", 7999, CeilingFraction); ok {
		t.Error("below 80 % is not near")
	}
	var none *Ceiling
	if _, ok := none.Near("goodput", 1e9, CeilingFraction); ok {
		t.Error("no ceiling judges nothing")
	}
	if _, ok := (&Ceiling{Error: "x"}).Near("goodput", 1e9, CeilingFraction); ok {
		t.Error("an unmeasured ceiling judges nothing")
	}
}
