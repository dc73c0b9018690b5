package test

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// evQuickStartMarker opens README.md's EV quick start; its commands are
// the ```console block after it.
const evQuickStartMarker = "**EV charging from its OCPI feed.**"

// evQuickStartCommands returns the commands of README.md's EV quick
// start (one per terminal; `a && b` split), comments removed.
func evQuickStartCommands(t *testing.T) [][]string {
	t.Helper()
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(raw), evQuickStartMarker)
	if !ok {
		t.Fatalf("README.md has no %q", evQuickStartMarker)
	}
	_, rest, ok = strings.Cut(rest, "```console\n")
	block, _, ok2 := strings.Cut(rest, "\n```")
	if !ok || !ok2 {
		t.Fatal("README.md's EV quick start has no ```console block")
	}
	comment := regexp.MustCompile(`\s+#.*$`)
	var out [][]string
	for _, l := range strings.Split(block, "\n") {
		for _, c := range strings.Split(strings.TrimSpace(comment.ReplaceAllString(l, "")), " && ") {
			if f := strings.Fields(c); len(f) > 0 {
				out = append(out, f)
			}
		}
	}
	return out
}

// TestEVQuickStart runs README.md's EV quick start as written, in a fresh
// tree: the two builds, the daemon on examples/ev-5min/dcgpd.toml, the
// history replayed, the example's OCPI server and `dcgpd ocpi` deriving
// the served counts from its status (each long-running command started
// as in its own terminal). Within three minutes the page's API must show
// a site-bin after the history with drivers turned away, where the
// example's truth has the site full for more than half of the bin, and
// the served counts of the live bins must be the example's (the sessions
// derived from the status, at most two short).
func TestEVQuickStart(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED in -short mode: builds and runs the EV quick start (about a minute)")
	}
	if !portsFree("127.0.0.1:4222", "127.0.0.1:9464", "127.0.0.1:8081") {
		t.Skip("SKIPPED: 127.0.0.1:4222, :9464 or :8081 (the quick start's addresses) is in use")
	}
	cmds := evQuickStartCommands(t)
	if len(cmds) != 6 {
		t.Fatalf("README's EV quick start has %d commands, this test knows 6: %q", len(cmds), cmds)
	}
	dir := freshTree(t)
	var bg []*exec.Cmd
	defer func() {
		for i := len(bg) - 1; i >= 0; i-- {
			_ = bg[i].Process.Signal(syscall.SIGINT)
			done := make(chan error, 1)
			go func() { done <- bg[i].Wait() }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				_ = bg[i].Process.Kill()
				t.Errorf("%v did not stop on SIGINT", bg[i].Args)
			}
		}
	}()
	for _, c := range cmds {
		switch {
		case c[0] == "go" && len(c) == 5 && c[1] == "build" && c[2] == "-o" && strings.HasPrefix(c[3], "bin/"):
			cmd := exec.Command("go", "build", "-o", filepath.Join(dir, c[3]), c[4])
			cmd.Dir = ".."
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", strings.Join(c, " "), err, out)
			}
		case strings.HasPrefix(c[0], "bin/"):
			cmd := exec.Command(filepath.Join(dir, c[0]), c[1:]...)
			cmd.Dir = dir
			out, errb := &syncBuffer{}, &syncBuffer{}
			cmd.Stdout, cmd.Stderr = out, errb
			long := len(c) == 1 || c[1] == "serve" || c[1] == "ocpi"
			if !long {
				if err := cmd.Run(); err != nil {
					t.Fatalf("%s: %v\n%s", strings.Join(c, " "), err, errb.String())
				}
				continue
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			bg = append(bg, cmd)
			switch {
			case len(c) > 1 && c[1] == "serve":
				waitReady(t, "http://127.0.0.1:9464/readyz", errb)
			case len(c) == 1:
				waitFor(t, c[0], func() bool { return strings.Contains(out.String(), "serving ") }, errb)
			}
		default:
			t.Fatalf("README's EV quick start: %q is neither a `go build -o bin/…` nor a `bin/…` command", strings.Join(c, " "))
		}
	}
	evQuickStartCheck(t, dir)
}

// evPageBin is a site-bin of the page's API.
type evPageBin struct {
	BinStart   time.Time `json:"bin_start"`
	Demand     *float64  `json:"demand"`
	TurnedAway *float64  `json:"turned_away"`
}

// evQuickStartCheck waits for a live site-bin with drivers turned away
// and checks it and the live served counts against the example's files.
func evQuickStartCheck(t *testing.T, dir string) {
	t.Helper()
	live := time.Date(2024, 5, 8, 13, 0, 0, 0, time.UTC)
	full, served := evExampleTruth(t, dir)
	deadline := time.Now().Add(3 * time.Minute)
	for {
		var m struct {
			Products []struct {
				Product string      `json:"product"`
				Bins    []evPageBin `json:"bins"`
			} `json:"products"`
		}
		resp, err := http.Get("http://127.0.0.1:9464/api/models/ev")
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&m)
			resp.Body.Close()
		}
		var turned []string
		var mismatched, liveBins int
		for _, p := range m.Products {
			for _, b := range p.Bins {
				if b.BinStart.Before(live) {
					continue
				}
				key := p.Product + " " + b.BinStart.Format(time.RFC3339)
				if b.Demand != nil {
					liveBins++
					if *b.Demand != served[key] {
						mismatched++
						t.Logf("%s: %v sessions derived from the status, %v served", key, *b.Demand, served[key])
					}
				}
				if b.TurnedAway != nil && *b.TurnedAway > 0.01 {
					if !(full[key] > 0.5) {
						t.Fatalf("%s: %.3f drivers turned away, but the example's site was full for %.2f of the bin", key, *b.TurnedAway, full[key])
					}
					turned = append(turned, key+" "+strconv.FormatFloat(*b.TurnedAway, 'f', 3, 64))
				}
			}
		}
		if len(turned) > 0 {
			if mismatched > 2 {
				t.Errorf("%d of %d live site-bins' served counts differ from the example's", mismatched, liveBins)
			}
			t.Logf("turned away: %s (%d live site-bins, %d served counts differ)", strings.Join(turned, "; "), liveBins, mismatched)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no live site-bin with drivers turned away within 3 minutes (%d live site-bins; last error %v)", liveBins, err)
		}
		time.Sleep(time.Second)
	}
}

// evExampleTruth reads the example's full fraction (truth.csv) and
// served count (obs.csv, 0 where the bin was sent without one) per
// "site bin_start".
func evExampleTruth(t *testing.T, dir string) (full, served map[string]float64) {
	t.Helper()
	full, served = map[string]float64{}, map[string]float64{}
	for _, f := range []struct {
		name string
		col  int
		into map[string]float64
	}{{"truth.csv", 5, full}, {"obs.csv", 2, served}} {
		raw, err := os.ReadFile(filepath.Join(dir, "examples", "ev-5min", f.name))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range bytes.Split(bytes.TrimSpace(raw), []byte("\n"))[1:] {
			r := strings.Split(string(l), ",")
			v, err := strconv.ParseFloat(r[f.col], 64)
			if err != nil || math.IsNaN(v) {
				v = 0
			}
			f.into[r[1]+" "+r[0]] = v
		}
	}
	return full, served
}
