//go:build !linux

package wire

import "net"

// rawTCP is c: raw syscalls are for Linux.
func rawTCP(c net.Conn) net.Conn { return c }
