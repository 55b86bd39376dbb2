//go:build unix

package httpapi

import (
	"errors"
	"net"
	"syscall"
)

// peerClosed reports whether the other end of conn has closed it (end of
// file or reset) without reading anything off it and without waiting: a
// stream on a connection taken over has no reader goroutine, as net/http's
// background read would be, to notice that its console went away.
func peerClosed(conn net.Conn) bool {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	_ = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = (n == 0 && err == nil) || errors.Is(err, syscall.ECONNRESET)
		return true // never wait for data
	})
	return closed
}
