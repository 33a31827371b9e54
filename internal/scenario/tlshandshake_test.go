package scenario

import (
	"strings"
	"testing"
)

func TestTLSHandshakeShape(t *testing.T) {
	t.Parallel()
	full, resumed := tlsHandshakeFull.Resolve(defaults), tlsHandshakeResumed.Resolve(defaults)
	if !full.NewConn || !full.NoResume || full.Proto != "tls" || tlsHandshakeFull.Name != TLSHandshakeFull {
		t.Errorf("full: shape %+v", full)
	}
	if !resumed.NewConn || resumed.NoResume || resumed.Proto != "tls" || tlsHandshakeResumed.Probes != ProbeTimeWait || tlsHandshakeFull.Account == nil {
		t.Errorf("resumed: shape %+v", resumed)
	}
	if !strings.Contains(tlsHandshakeFull.About, "full") || !strings.Contains(tlsHandshakeResumed.About, "resum") ||
		tlsHandshakeFull.Report != tlsTable || tlsHandshakeResumed.Report != tlsTable {
		t.Errorf("abouts %q / %q", tlsHandshakeFull.About, tlsHandshakeResumed.About)
	}
	if got := strings.Join(Group(TLSHandshakeGroup), ","); got != "tls-handshake-full,tls-handshake-resumed" {
		t.Errorf("group %s", got)
	}
}
