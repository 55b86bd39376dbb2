package tcptest

import (
	"io"
	"net"
	"testing"
)

// Every connection reaches serve, and the port closes with the test.
func TestServe(t *testing.T) {
	var addr string
	t.Run("serve", func(t *testing.T) {
		addr = Serve(t, func(c net.Conn) {
			_, _ = io.WriteString(c, "hello")
			c.Close()
		})
		for range 2 {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(c)
			c.Close()
			if err != nil || string(got) != "hello" {
				t.Fatalf("read %q, %v", got, err)
			}
		}
	})
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatal("the port still accepts after the test")
	}
}
