package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/dcgpd/dcgpd/snapshot"
)

// runSnapshot is `dcgpd snapshot inspect FILE`: verify a snapshot and
// print what it holds.
func runSnapshot(_ context.Context, args []string, stdout, stderr io.Writer) error {
	const use = "usage: dcgpd snapshot inspect FILE\n\nVerifies a snapshot file (checksum, format, consistency) and prints what it holds."
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" {
			fmt.Fprintln(stderr, use)
			return flag.ErrHelp
		}
	}
	if len(args) != 2 || args[0] != "inspect" {
		fmt.Fprintln(stderr, use)
		return errUsage
	}
	b, err := os.ReadFile(args[1])
	if err != nil {
		return err
	}
	m, err := snapshot.Unmarshal(b)
	if err != nil {
		return fmt.Errorf("%s: %w", args[1], err)
	}
	snapshot.Describe(stdout, m, len(b))
	return nil
}
