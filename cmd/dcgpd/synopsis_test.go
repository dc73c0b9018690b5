package main

import (
	"context"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeSynopsisListsEveryFlag: the synopsis the README points to
// (docs/cli.md) lists every command and names every flag of each, so a
// reader of it sees each option the binary takes.
func TestReadmeSynopsisListsEveryFlag(t *testing.T) {
	raw, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i := strings.Index(doc, "```\n")
	if i < 0 {
		t.Fatal("docs/cli.md has no synopsis block")
	}
	block := doc[i+4:]
	block = block[:strings.Index(block, "```")]
	// Each command's entry: its line and the indented lines after it.
	entries := map[string]string{}
	var cur string
	for _, line := range strings.Split(block, "\n") {
		if rest, ok := strings.CutPrefix(line, "dcgpd "); ok {
			cur = strings.Fields(rest)[0]
		}
		if cur != "" {
			entries[cur] += line + "\n"
		}
	}
	flagRe := regexp.MustCompile(`(?m)^\s+-([a-z0-9-]+)`)
	for _, c := range commands {
		entry, listed := entries[c.name]
		if !listed {
			t.Errorf("dcgpd %s is missing from docs/cli.md", c.name)
			continue
		}
		var help strings.Builder
		_ = c.run(context.Background(), []string{"-h"}, io.Discard, &help)
		for _, m := range flagRe.FindAllStringSubmatch(help.String(), -1) {
			if !strings.Contains(entry, "--"+m[1]) {
				t.Errorf("dcgpd %s: --%s is missing from the README's synopsis", c.name, m[1])
			}
		}
	}
}
