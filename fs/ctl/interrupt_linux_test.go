package ctl

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/orgfs/orgfs/internal/testkit"
)

// holdTransport holds the first answered request whose route has the
// method and path suffix given until release is closed; a caller that gave
// up meanwhile gets its context's error, as the client does when it gives
// up with the answer on its way.
type holdTransport struct {
	base          http.RoundTripper
	method, path  string
	held, release chan struct{}
}

func (h *holdTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := h.base.RoundTrip(r)
	if err == nil && r.Method == h.method && strings.HasSuffix(r.URL.Path, h.path) {
		select {
		case <-h.held:
		default:
			close(h.held)
			<-h.release
			if cerr := r.Context().Err(); cerr != nil {
				resp.Body.Close()
				return nil, cerr
			}
		}
	}
	return resp, err
}

// An action interrupted by a signal after the service acted still
// succeeds, once: a Go program's runtime sends its threads SIGURG at any
// time, and canceled halfway the write answered EINTR, the program wrote it
// again, and the service installed two images.
func TestCtlActionInterruptedAfterTheServiceActed(t *testing.T) {
	h := &holdTransport{base: http.DefaultTransport.(*http.Transport).Clone(), method: http.MethodPost, path: "/images/install",
		held: make(chan struct{}), release: make(chan struct{})}
	o := envOptions{}
	o.Client.Transport = h
	e := ctlEnv(t, o)
	t.Cleanup(func() {
		select {
		case <-h.release:
		default:
			close(h.release)
		}
	})
	sw, err := e.Client.Software(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`{"name": "interrupted", "software_ids": [%d], "base_image_id": %d}`+"\n", sw.Software[0].ID, sw.BaseImages[0].ID)
	f, err := os.OpenFile(e.ctl("images", "install"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Signaled once the service has acted: the thread waits in the kernel
	// for the answer.
	done := testkit.SignalDuring(t, h.held, "the write sent no install request", func() error {
		_, err := unix.Write(int(f.Fd()), []byte(body))
		return err
	})
	time.Sleep(200 * time.Millisecond) // the kernel sends the interrupt on
	close(h.release)
	if err := testkit.ResultWithin(t, done, 10*time.Second, "the write interrupted by a signal did not return"); err != nil {
		t.Errorf("install interrupted after the service acted: %v, want success", err)
	}
	if r := e.result("images"); !r.OK {
		t.Errorf("images/result: %+v, want done", r)
	}
	if n := e.Requests("POST /images/install"); n != 1 {
		t.Errorf("%d install requests, want 1", n)
	}
}
