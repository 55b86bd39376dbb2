// Package tcptest serves raw TCP on a loopback port, for tests of a client
// facing a server that misbehaves: one that never answers, hangs up, or
// speaks another protocol.
package tcptest

import (
	"net"
	"testing"
)

// Serve accepts connections on a free loopback port until the test ends
// and hands each to serve in a goroutine of its own; serve closes it. It
// returns the address.
func Serve(t testing.TB, serve func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
	return l.Addr().String()
}
