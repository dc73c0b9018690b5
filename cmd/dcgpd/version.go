package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/dcgpd/dcgpd/stream/wire"
)

// runVersion prints the module version and VCS revision the binary was
// built from. A build from a work tree reports version "(devel)"; a build
// without VCS information (go run, which stamps none unless given
// -buildvcs=true, or -buildvcs=false) reports revision "unknown".
func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: dcgpd version\n\nPrints the module version, the VCS revision (\"(modified)\" for uncommitted changes),\nthe commit time and the Go version this binary was built from. It takes no flags.")
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	b := wire.ReadBuild()
	rev := b.Revision
	if b.Modified {
		rev += " (modified)"
	}
	fmt.Fprintf(stdout, "dcgpd %s\nrevision %s\n", b.Version, rev)
	if b.Time != "" {
		fmt.Fprintf(stdout, "committed %s\n", b.Time)
	}
	fmt.Fprintf(stdout, "go %s\n", b.GoVersion)
	return nil
}
