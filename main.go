// Command orgfs mounts an organization's cloud-computer storage as a local
// drive and runs the emulator of the service it talks to. The commands live
// in internal/cli.
package main

import (
	"os"

	"github.com/orgfs/orgfs/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args, os.Stdout, os.Stderr))
}
