package netlab

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ethtoolSTSO is ETHTOOL_STSO (include/uapi/linux/ethtool.h): set TCP
// segmentation offload on or off.
const ethtoolSTSO = 0x1f

// setTSO turns TCP segmentation offload of dev (in the calling thread's
// network namespace) on or off with the SIOCETHTOOL ioctl, as
// `ethtool -K dev tso off` does.
func setTSO(dev string, on bool) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("ethtool socket: %w", err)
	}
	defer unix.Close(fd)
	val := struct{ cmd, data uint32 }{cmd: ethtoolSTSO}
	if on {
		val.data = 1
	}
	var ifr struct {
		name [unix.IFNAMSIZ]byte
		data unsafe.Pointer
		_    [16]byte
	}
	copy(ifr.name[:], dev)
	ifr.data = unsafe.Pointer(&val)
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); errno != 0 {
		return fmt.Errorf("ethtool -K %s tso %v: %w", dev, on, errno)
	}
	return nil
}
