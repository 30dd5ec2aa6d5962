package cli

// systemd's notify protocol (Type=notify units).

import (
	"net"
	"os"
	"strings"
	"time"
)

// sdNotify sends state to systemd when it asked for it (NOTIFY_SOCKET, as
// for Type=notify units); it reports whether it was sent.
func sdNotify(state string) bool {
	sock := os.Getenv("NOTIFY_SOCKET")
	if sock == "" {
		return false
	}
	if strings.HasPrefix(sock, "@") {
		sock = "\x00" + sock[1:] // an abstract socket
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetWriteDeadline(time.Now().Add(time.Second))
	_, err = c.Write([]byte(state))
	return err == nil
}
