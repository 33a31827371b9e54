package scenario

import (
	"strings"
	"testing"

	"proxybench/internal/manifest"
)

func TestH2PayloadShape(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		sc    *Scenario
		path  string
		bytes int64
	}{
		{&h2Payload64k, "/fast/bytes/65536", 64 << 10},
		{&h2Payload1m, "/fast/bytes/1048576", 1 << 20},
	} {
		sh := tt.sc.Resolve(defaults)
		if tt.sc.Path("fast", defaults) != tt.path || sh.BodyBytes != tt.bytes || sh.Proto != "h2" || sh.Streams != H2Streams ||
			tt.sc.Report != payloadTable || tt.sc.Skip("haproxy") != nil {
			t.Errorf("%s: shape %+v", tt.sc.Name, sh)
		}
	}
	if got := strings.Join(Group(H2PayloadGroup), ","); got != "h2-payload-64k,h2-payload-1m" {
		t.Errorf("group %s", got)
	}
	// The payload table names the protocol and the TLS version of an h2 cell.
	d := bodyAccount(h2Payload64k.Resolve(defaults), Counts{WindowS: 1, Bytes: 100 << 16})
	fs, ok := row(t, payloadTable, ReportCell{Name: "c", RPS: 100, DurationS: 1, S2xx: 100, Data: d, Protocol: "h2",
		TLS: &manifest.TLS{ALPN: "h2", Version: "TLS 1.3"}})
	if got := strings.Join(texts(fs), "|"); !ok || got != "c|64 KiB|100|6.6|6.6|yes|h2, TLS 1.3" {
		t.Errorf("row %s", got)
	}
}
