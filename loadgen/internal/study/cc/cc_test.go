package cc

import "testing"

func TestParseSSCongestion(t *testing.T) {
	t.Parallel()
	// iperf3's control connection (bbr, few bytes) and its data stream.
	out := "0      0      198.18.0.1:40112 198.18.0.2:5201\n" +
		"\t ts sack bbr wscale:7,7 rto:201 rtt:0.1/0.05 bytes_sent:180 bytes_acked:181 bbr:(bw:1Mbps,mrtt:0.02)\n" +
		"0      3000000 198.18.0.1:40114 198.18.0.2:5201\n" +
		"\t ts sack cubic wscale:7,7 rto:201 rtt:0.3/0.1 bytes_sent:90000000 bytes_acked:89000000 cwnd:120\n"
	if got := ParseSSCongestion(out); got != "cubic" {
		t.Errorf("ParseSSCongestion = %q, want cubic", got)
	}
	reno := "0 0 198.18.0.1:1 198.18.0.2:5201\n\t reno wscale:7,7 bytes_acked:10\n"
	if got := ParseSSCongestion(reno); got != "reno" {
		t.Errorf("ParseSSCongestion = %q, want reno", got)
	}
	// A data socket an earlier run (bbr) left established: more bytes
	// acknowledged than this run's so far, but it has not sent for 3 s.
	stale := "0 0 198.18.0.1:40200 198.18.0.2:5201\n\t ts sack bbr wscale:7,7 bytes_acked:224000000 lastsnd:3120 lastrcv:3120\n" +
		"0 0 198.18.0.1:40210 198.18.0.2:5201\n\t ts sack reno wscale:7,7 bytes_acked:58000000 lastsnd:1 lastrcv:2\n" +
		"0 0 198.18.0.1:40208 198.18.0.2:5201\n\t ts sack reno wscale:7,7 bytes_acked:181 lastsnd:900 lastrcv:900\n"
	if got := ParseSSCongestion(stale); got != "reno" {
		t.Errorf("ParseSSCongestion with a stale socket = %q, want reno (the one sending now)", got)
	}
	if got := ParseSSCongestion(""); got != "" {
		t.Errorf("no sockets: %q", got)
	}
}

func TestParseIperf3(t *testing.T) {
	t.Parallel()
	good := `{"start":{},"end":{"sum_sent":{"bits_per_second":9.5e8,"retransmits":12},"sum_received":{"bits_per_second":941000000},"cpu_utilization_percent":{"host_total":55.5,"remote_total":20.25},"sender_tcp_congestion":"bbr","receiver_tcp_congestion":"bbr"}}`
	r, err := ParseIperf3(good)
	if err != nil || r != (Iperf3Result{Mbps: 941, Retransmits: 12, SenderCC: "bbr", SenderCPU: 55.5, ReceiverCPU: 20.25}) {
		t.Errorf("ParseIperf3 = %+v, %v", r, err)
	}
	for _, bad := range []string{`{"error":"unable to connect to server"}`, `{"end":{}}`, `not json`} {
		if _, err := ParseIperf3(bad); err == nil {
			t.Errorf("ParseIperf3(%s): want an error", bad)
		}
	}
}

func TestParseSNMP(t *testing.T) {
	t.Parallel()
	out := "Ip: Forwarding DefaultTTL\nIp: 1 64\nTcp: RtoAlgorithm RtoMin ActiveOpens RetransSegs InErrs\nTcp: 1 200 5 4321 0\n"
	if v, err := ParseSNMP(out, "Tcp", "RetransSegs"); err != nil || v != 4321 {
		t.Errorf("ParseSNMP = %v, %v", v, err)
	}
	if _, err := ParseSNMP(out, "Tcp", "Nope"); err == nil {
		t.Error("missing counter: want an error")
	}
}
