package cli

// orgfs unmount: send what waits, showing progress, then unmount.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/orgfs/orgfs/fs/ctl"
)

const unmountSynopsis = ` MOUNTPOINT

Sends what waits to upload, showing its progress, then unmounts. Exit
status 0 when everything written is on the service, 3 when files were left
(they stay staged and upload at the next mount), 1 when the unmount failed.`

func runUnmount(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("unmount", unmountSynopsis, stdout)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("unmount needs the mount point (see 'orgfs unmount --help')")
	}
	mnt, err := mountOf(fs.Arg(0))
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	type outcome struct {
		r   ctl.Result
		err error
	}
	synced := make(chan outcome, 1)
	go func() {
		r, err := writeCtl(mnt, "sync", "\n")
		synced <- outcome{r, err}
	}()
	qctx, cancel := context.WithCancel(ctx)
	shown := make(chan error, 1)
	go func() { shown <- showQueue(qctx, stdout, mnt, false) }()
	var o outcome
	select {
	case o = <-synced:
	case <-ctx.Done():
		o.err = errors.New("interrupted")
	}
	cancel()
	<-shown
	if err := unmountPath(mnt); err != nil {
		return err
	}
	if o.err != nil {
		return &exitError{code: 3, msg: fmt.Sprintf("unmounted %s with files not uploaded: %s (%v); they stay staged and upload at the next mount of this organization with the same cache dir", mnt, o.r.Message, o.err)}
	}
	fmt.Fprintf(stdout, "orgfs: everything written is on the service; %s unmounted\n", mnt)
	return nil
}

// unmountPath unmounts an orgfs mount.
func unmountPath(mnt string) error {
	if err := userUnmount(mnt); err != nil {
		return fmt.Errorf("unmounting %s: %w (programs still use it? close them, or detach it: fusermount3 -u -z %s)", mnt, err, mnt)
	}
	return nil
}
