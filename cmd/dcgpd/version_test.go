package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/dcgpd/dcgpd/stream/wire"
)

func TestVersionCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"version"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	b := wire.ReadBuild()
	lines := strings.Split(out.String(), "\n")
	if lines[0] != "dcgpd "+b.Version || !strings.HasPrefix(lines[1], "revision "+b.Revision) {
		t.Errorf("version printed %q; build is %+v", out.String(), b)
	}
	if b.Version == "" || b.Revision == "" {
		t.Errorf("empty version or revision: %+v", b)
	}
	if code := run(context.Background(), []string{"version", "extra"}, &out, &errb); code != 2 {
		t.Errorf("version extra: exit %d, want 2", code)
	}
}
