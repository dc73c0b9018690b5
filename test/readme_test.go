package test

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode"
)

// readmeCommand is one line of a ```sh block of README.md.
type readmeCommand struct {
	block int
	line  string   // as written, comment removed
	args  []string // after `go run ./cmd/dcgpd` or `bin/dcgpd`
}

// readmeCommands returns the commands of README.md's sh blocks, in order.
func readmeCommands(t *testing.T) []readmeCommand {
	t.Helper()
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	comment := regexp.MustCompile(`\s+#.*$`)
	var out []readmeCommand
	block, in := 0, false
	for _, l := range strings.Split(string(raw), "\n") {
		switch {
		case strings.HasPrefix(l, "```sh"):
			in = true
			block++
			continue
		case strings.HasPrefix(l, "```"):
			in = false
			continue
		}
		if !in {
			continue
		}
		line := strings.TrimSpace(comment.ReplaceAllString(l, ""))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		c := readmeCommand{block: block, line: line}
		for _, prefix := range []string{"go run ./cmd/dcgpd ", "bin/dcgpd "} {
			if rest, ok := strings.CutPrefix(line, prefix); ok {
				c.args = strings.Fields(rest)
			}
		}
		out = append(out, c)
	}
	return out
}

// notRun are README commands this test does not run, with the reason.
var notRun = map[string]string{
	"go test ./...":                     "the suite this test belongs to (CI runs it)",
	"go build -o bin/dcgpd ./cmd/dcgpd": "the test's own freshly built dcgpd stands for bin/dcgpd",
}

// longRunning reports whether a dcgpd command runs until interrupted.
func longRunning(args []string) bool {
	if len(args) == 0 {
		return false
	}
	switch args[0] {
	case "serve", "feedsim":
		return true
	case "watch":
		return !slicesContain(args, "--count")
	}
	return false
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// freshTree copies what README commands read (the example configurations
// and data, dcgpd.toml, config.toml) into a new directory: a clone's files
// without anything beside the repository (no ../shared).
func freshTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"dcgpd.toml", "config.toml"} {
		copyFile(t, filepath.Join("..", f), filepath.Join(dir, f))
	}
	err := filepath.WalkDir("../examples", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel("..", p)
		copyFile(t, p, filepath.Join(dir, rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a bytes.Buffer safe for a process writing while the test
// reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestReadmeCommands runs every command of README.md's sh blocks as
// written, in a fresh tree, with the freshly built dcgpd standing for `go
// run ./cmd/dcgpd` and `bin/dcgpd` (the daemon session's built binary): the set-up block's demo, the examples, the daemon
// session (serve and watch run until interrupted, started before the
// block's other commands, as in their own terminals) and the simulate/fit
// pair. `go test ./...` is not run (notRun says why). A command that is
// neither is an error, so the README cannot show a command nobody runs.
func TestReadmeCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED in -short mode: runs the demo, the examples and a daemon session")
	}
	cmds := readmeCommands(t)
	if len(cmds) < 10 {
		t.Fatalf("found %d commands in README.md's sh blocks; the parser is broken", len(cmds))
	}
	dir := freshTree(t)
	blocks := map[int][]readmeCommand{}
	var order []int
	for _, c := range cmds {
		if why, ok := notRun[c.line]; ok {
			t.Logf("not run: %s (%s)", c.line, why)
			continue
		}
		if c.args == nil {
			t.Errorf("README command %q is neither `go run ./cmd/dcgpd …`, `bin/dcgpd …` nor in notRun", c.line)
			continue
		}
		if blocks[c.block] == nil {
			order = append(order, c.block)
		}
		blocks[c.block] = append(blocks[c.block], c)
	}
	outputs := map[string]string{}
	for _, b := range order {
		t.Run(fmt.Sprintf("block%d", b), func(t *testing.T) { runReadmeBlock(t, dir, blocks[b], outputs) })
	}
	checkDemoExample(t, dir, outputs)
}

// runReadmeBlock runs one sh block: its long-running commands first (serve
// until it is ready), then the others to completion; it stores each
// completed command's standard output in outputs.
func runReadmeBlock(t *testing.T, dir string, cmds []readmeCommand, outputs map[string]string) {
	type bg struct {
		c    readmeCommand
		cmd  *exec.Cmd
		out  *syncBuffer
		errb *syncBuffer
	}
	var started []bg
	defer func() {
		for i := len(started) - 1; i >= 0; i-- {
			p := started[i]
			_ = p.cmd.Process.Signal(syscall.SIGINT)
			done := make(chan error, 1)
			go func() { done <- p.cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil && p.c.args[0] == "serve" {
					t.Errorf("%s: %v\n%s", p.c.line, err, p.errb.String())
				}
			case <-time.After(60 * time.Second):
				_ = p.cmd.Process.Kill()
				t.Errorf("%s did not stop on SIGINT", p.c.line)
			}
		}
	}()
	for _, c := range cmds {
		if !longRunning(c.args) {
			continue
		}
		if c.args[0] == "feedsim" && !portsFree("127.0.0.1:8080") {
			t.Skipf("SKIPPED the GBFS quick start: 127.0.0.1:8080 (feedsim's address) is in use")
		}
		if c.args[0] == "serve" && !portsFree("127.0.0.1:4222", "127.0.0.1:9464") {
			t.Skipf("SKIPPED the daemon session: 127.0.0.1:4222 or :9464 (dcgpd.toml's addresses) is in use")
		}
		p := bg{c: c, cmd: exec.Command(dcgpdPath, c.args...), out: &syncBuffer{}, errb: &syncBuffer{}}
		p.cmd.Dir, p.cmd.Stdout, p.cmd.Stderr = dir, p.out, p.errb
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		started = append(started, p)
		switch c.args[0] {
		case "serve":
			waitReady(t, "http://127.0.0.1:9464/readyz", p.errb)
		case "watch":
			waitFor(t, c.line, func() bool { return strings.Contains(p.errb.String(), "watching ") }, p.errb)
		}
	}
	for _, c := range cmds {
		if longRunning(c.args) {
			continue
		}
		cmd := exec.Command(dcgpdPath, c.args...)
		cmd.Dir = dir
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\n%s", c.line, err, errb.String())
		}
		outputs[c.line] = out.String()
		t.Logf("ran: %s", c.line)
	}
	for _, p := range started {
		if p.c.args[0] != "watch" {
			continue
		}
		// The replayed week's last bin, filtered, for every hub.
		last := "2024-01-07T23:00:00Z  bikes  filtered"
		waitFor(t, p.c.line, func() bool { return strings.Count(p.out.String(), last) >= 4 }, p.out)
		t.Logf("ran: %s (%d lines)", p.c.line, strings.Count(p.out.String(), "\n"))
	}
}

// portsFree reports whether nothing listens on the addresses.
func portsFree(addrs ...string) bool {
	for _, a := range addrs {
		l, err := net.Listen("tcp", a)
		if err != nil {
			return false
		}
		l.Close()
	}
	return true
}

// waitReady polls url until it answers 200.
func waitReady(t *testing.T, url string, log fmt.Stringer) {
	t.Helper()
	waitFor(t, "GET "+url, func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, log)
}

// waitFor polls ok for up to a minute.
func waitFor(t *testing.T, what string, ok func() bool, log fmt.Stringer) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not done within 60s; output:\n%s", what, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkDemoExample: examples/demo is the demo's cluster as `dcgpd simulate`
// writes it, and its README fit reproduces the demo's batch DCGP scores
// that the README quotes.
func checkDemoExample(t *testing.T, dir string, outputs map[string]string) {
	sim := t.TempDir()
	if code, _, stderr := runCLI(t, "simulate", "--dir", sim, "--seed", "1", "--hubs", "5", "--days", "14"); code != 0 {
		t.Fatalf("simulate: %s", stderr)
	}
	for _, f := range []string{"obs.csv", "products.csv", "truth.csv"} {
		a, _ := os.ReadFile(filepath.Join(sim, f))
		b, _ := os.ReadFile(filepath.Join(dir, "examples", "demo", f))
		if !bytes.Equal(a, b) {
			t.Errorf("examples/demo/%s is not what `dcgpd simulate --seed 1 --hubs 5 --days 14` writes", f)
		}
	}
	const fit = "go run ./cmd/dcgpd fit --obs examples/demo/obs.csv --products examples/demo/products.csv --config examples/demo/model.toml"
	post, ok := outputs[fit]
	if !ok {
		t.Fatalf("README lacks %q", fit)
	}
	observed, heldOut := exampleRMSE(t, filepath.Join(dir, "examples", "demo"), post)
	if math.Abs(observed-3.366) > 5e-4 || math.Abs(heldOut-3.468) > 5e-4 {
		t.Errorf("examples/demo fit: RMSE %.4f observed, %.4f held out; README says 3.366 and 3.468", observed, heldOut)
	}
}

// exampleRMSE scores a posterior CSV against an example's truth.csv over
// the observed and the held-out cells of its obs.csv.
func exampleRMSE(t *testing.T, dir, posterior string) (observed, heldOut float64) {
	t.Helper()
	read := func(r io.Reader) [][]string {
		recs, err := csv.NewReader(bufio.NewReader(r)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		return recs[1:]
	}
	open := func(name string) [][]string {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return read(f)
	}
	held := map[string]bool{}
	for _, r := range open("obs.csv") {
		held[r[0]+"/"+r[1]] = r[2] == ""
	}
	truth := map[string]float64{}
	for _, r := range open("truth.csv") {
		truth[r[0]+"/"+r[1]], _ = strconv.ParseFloat(r[2], 64)
	}
	var s [2]float64
	var n [2]int
	for _, r := range read(strings.NewReader(posterior)) {
		k := r[0] + "/" + r[1]
		m, _ := strconv.ParseFloat(r[2], 64)
		j := 0
		if held[k] {
			j = 1
		}
		s[j] += (m - truth[k]) * (m - truth[k])
		n[j]++
	}
	if n[0] == 0 || n[1] == 0 {
		t.Fatalf("posterior has %d observed and %d held-out cells", n[0], n[1])
	}
	return math.Sqrt(s[0] / float64(n[0])), math.Sqrt(s[1] / float64(n[1]))
}

// pendingDocs are documents the README may link before they exist on a
// branch; a link to one is reported, not failed, until the file exists.
var pendingDocs = map[string]bool{}

// TestReadmeLinks: the README stays short, and every relative link in it
// and in docs/ names a file that exists (or a pending document) and, with
// a #fragment, a heading of that file.
func TestReadmeLinks(t *testing.T) {
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), "\n"); n > 300 {
		t.Errorf("README.md has %d lines; the budget is 300 (details belong in docs/)", n)
	}
	docs, _ := filepath.Glob("../docs/*.md")
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, from := range append([]string{"../README.md"}, docs...) {
		text, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(text), -1) {
			target, frag, _ := strings.Cut(m[1], "#")
			if strings.Contains(target, "://") || strings.HasPrefix(m[1], "mailto:") {
				continue
			}
			path := from
			if target != "" {
				path = filepath.Join(filepath.Dir(from), target)
			}
			rel, _ := filepath.Rel("..", path)
			body, err := os.ReadFile(path)
			switch {
			case err != nil && pendingDocs[filepath.ToSlash(rel)]:
				t.Logf("%s links %s, not on this branch yet", from, rel)
				continue
			case err != nil:
				t.Errorf("%s links %s: %v", from, m[1], err)
				continue
			}
			if frag != "" && !slices.Contains(headingAnchors(string(body)), frag) {
				t.Errorf("%s links %s: no heading with anchor #%s", from, m[1], frag)
			}
		}
	}
}

// headingAnchors returns the GitHub anchors of a Markdown file's headings:
// lower case, punctuation dropped, spaces as hyphens.
func headingAnchors(md string) []string {
	var out []string
	for _, l := range strings.Split(md, "\n") {
		h, ok := strings.CutPrefix(strings.TrimLeft(l, "#"), " ")
		if !ok || !strings.HasPrefix(l, "#") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		out = append(out, b.String())
	}
	return out
}

// TestReadmeServesBuiltBinary: the README starts nothing that runs as a
// service (serve, watch without --count) with `go run`, whose child
// outlives a stop of `go run` by its process id with the ports held; it
// runs the built binary, and builds it in the same block first.
func TestReadmeServesBuiltBinary(t *testing.T) {
	built := map[int]bool{}
	for _, c := range readmeCommands(t) {
		if c.line == "go build -o bin/dcgpd ./cmd/dcgpd" {
			built[c.block] = true
		}
		if !longRunning(c.args) {
			continue
		}
		if !strings.HasPrefix(c.line, "bin/dcgpd ") {
			t.Errorf("README starts %q: a service must run the built binary (bin/dcgpd), not go run", c.line)
		} else if !built[c.block] {
			t.Errorf("README runs %q before its block builds bin/dcgpd", c.line)
		}
	}
}
