// Package netlab owns the lab link the congestion-control study measures
// over: two network namespaces joined by a veth pair that the package makes
// itself (every byte stays inside them), shaped with tbf, with packet loss
// made by a tc eBPF program (built in Go with cilium/ebpf's asm, attached
// with TCX) that drops a packet when bpf_get_prandom_u32() falls under a
// threshold and counts what it saw and dropped in a per-CPU map. It also
// probes what the kernel can emulate (netem for delay), tears everything
// down on Close, and removes the leftovers of a crashed earlier lab (every
// name carries the lab's prefix).
package netlab
