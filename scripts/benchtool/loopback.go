package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// loopback mounts the local folder src at mnt through go-fuse's own loopback
// file system, with go-fuse's defaults (the kernel keeps entries and
// attributes 1 s, as orgfs's default), until SIGINT or SIGTERM: the floor of
// any FUSE file system on this machine, which the benchmarks measure orgfs
// against where FUSE itself sets the cost (git status's OPEN of each racily
// clean file). It prints "mounted" once the mount answers.
func loopback(src, mnt string) error {
	root, err := gofs.NewLoopbackRoot(src)
	if err != nil {
		return err
	}
	server, err := gofs.Mount(mnt, root, &gofs.Options{MountOptions: fuse.MountOptions{
		FsName:      "loopback",
		Name:        "loopback",
		DirectMount: os.Geteuid() == 0,
	}})
	if err != nil {
		return fmt.Errorf("mounting %s at %s: %w", src, mnt, err)
	}
	fmt.Println("mounted")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sig
		if err := server.Unmount(); err != nil {
			fmt.Fprintln(os.Stderr, "benchtool: unmount:", err)
			os.Exit(1)
		}
	}()
	server.Wait()
	return nil
}
