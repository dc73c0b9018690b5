package test

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/daemon"
)

// dcgpd builds the command once per test binary.
var dcgpdPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "dcgpd-test")
	if err != nil {
		panic(err)
	}
	dcgpdPath = filepath.Join(dir, "dcgpd")
	out, err := exec.Command("go", "build", "-tags", "faultinject", "-o", dcgpdPath, "../cmd/dcgpd").CombinedOutput()
	if err != nil {
		os.Stderr.Write(out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runCLI runs dcgpd and returns its exit code, stdout and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(dcgpdPath, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestSimulateFitRecoversTrueDemand runs `dcgpd simulate` and `dcgpd fit`
// end to end: the posterior has one row per observation row, and the
// diffusion-aware model recovers the true demand of the observed hours
// better than the censored model, which beats the plain Gaussian.
func TestSimulateFitRecoversTrueDemand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if code, _, stderr := runCLI(t, "simulate", "--dir", dir, "--hubs", "4", "--days", "5", "--seed", "3"); code != 0 {
		t.Fatalf("simulate: %d %s", code, stderr)
	}
	obs := readCSV(t, filepath.Join(dir, "obs.csv"))
	truth := readCSV(t, filepath.Join(dir, "truth.csv"))
	rmse := map[string]float64{}
	for _, lik := range []string{"gaussian", "tobit", "diffusion"} {
		out := filepath.Join(dir, lik+".csv")
		code, _, stderr := runCLI(t, "fit", "--obs", filepath.Join(dir, "obs.csv"), "--products", filepath.Join(dir, "products.csv"), "--out", out, "--likelihood", lik)
		if code != 0 {
			t.Fatalf("fit %s: exit %d: %s", lik, code, stderr)
		}
		if !strings.Contains(stderr, "ELBO") {
			t.Errorf("fit %s: no progress on stderr", lik)
		}
		// The summary states why learning stopped, with the gradient test.
		if !regexp.MustCompile(`(?m)^  status: (converged|stalled|line search failed|max iterations): .*test `).MatchString(stderr) {
			t.Errorf("fit %s: no stopping status in the summary:\n%s", lik, stderr)
		}
		if lik == "diffusion" && !strings.Contains(stderr, "stage tobit: ") {
			t.Errorf("fit diffusion: not staged from tobit:\n%s", stderr)
		}
		post := readCSV(t, out)
		if len(post) != len(obs) {
			t.Fatalf("%s: %d posterior rows for %d observation rows", lik, len(post)-1, len(obs)-1)
		}
		if strings.Join(post[0], ",") != "time,product,mean,var,pred_var,q05,q95" {
			t.Fatalf("header %v", post[0])
		}
		var s float64
		var n int
		for i := 1; i < len(post); i++ {
			if post[i][0] != obs[i][0] || post[i][1] != obs[i][1] {
				t.Fatalf("row %d: %v vs obs %v", i, post[i][:2], obs[i][:2])
			}
			num := func(j int) float64 {
				v, err := strconv.ParseFloat(post[i][j], 64)
				if err != nil || math.IsNaN(v) {
					t.Fatalf("row %d col %d: %q", i, j, post[i][j])
				}
				return v
			}
			m, v, pv, q05, q95 := num(2), num(3), num(4), num(5), num(6)
			// q05, q95: quantiles of the demand max(f, 0), as the daemon's.
			if !(v > 0 && pv > v && q05 >= 0 && q05 <= math.Max(m, 0) && m < q95) {
				t.Fatalf("row %d: inconsistent %v", i, post[i])
			}
			if obs[i][2] == "" { // held-out hour
				continue
			}
			y, _ := strconv.ParseFloat(truth[i][2], 64)
			s += (m - y) * (m - y)
			n++
		}
		rmse[lik] = math.Sqrt(s / float64(n))
	}
	t.Logf("in-sample RMSE against true demand: %v", rmse)
	if !(rmse["diffusion"] < rmse["tobit"] && rmse["tobit"] < rmse["gaussian"]) {
		t.Errorf("want DCGP < CGP < NCGP, got %v", rmse)
	}
}

// TestFitRejectsBadInput: malformed input gets a clear error naming the
// file and line, exit status 1, and never a panic.
func TestFitRejectsBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	products := write("p.csv", "product,x,y\na,0,0\nb,1,0\n")
	good := "time,product,demand,supply\n1,a,1,3\n1,b,2,3\n2,a,3,3\n2,b,1,3\n"
	cases := []struct {
		name, obs, config, want string
	}{
		{"malformed", "time,product,demand,supply\n1,a,1,3\n1,b\n", "", "obs.csv:3"},
		{"unknown product", "time,product,demand,supply\n1,a,1,3\n1,zz,2,3\n", "", `obs.csv:3: unknown product "zz"`},
		{"NaN", "time,product,demand,supply\n1,a,NaN,3\n", "", "obs.csv:2: demand"},
		{"negative supply", "time,product,demand,supply\n1,a,1,-3\n", "", "obs.csv:2: negative supply"},
		{"unsorted", "time,product,demand,supply\n2,a,1,3\n1,a,1,3\n", "", "obs.csv:3: time 1 before"},
		{"config unknown key", good, "[model]\nlikelihood = \"tobit\"\nnoise = 1.0\n", `m.toml: line 3: unknown key "model.noise"`},
		{"config bad value", good, "[model.diffusion]\nsink = 2.0\n", "sink"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"fit", "--obs", write("obs.csv", c.obs), "--products", products, "--out", filepath.Join(dir, "out.csv"), "--quiet"}
			if c.config != "" {
				args = append(args, "--config", write("m.toml", c.config))
			}
			code, _, stderr := runCLI(t, args...)
			if code != 1 || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "panic") {
				t.Errorf("exit %d, stderr %q; want exit 1 and %q", code, stderr, c.want)
			}
		})
	}
	if code, _, _ := runCLI(t, "fit"); code != 2 {
		t.Errorf("fit without --obs: exit %d, want 2", code)
	}
	if code, _, _ := runCLI(t, "nonsense"); code != 2 {
		t.Errorf("unknown command: exit %d, want 2", code)
	}
}

// TestFitConfigVariants runs `dcgpd fit` through the configuration's
// options: supply-aware one-step diffusion, an explicit transition matrix,
// two diffusion steps with a learned lengthscale and sink, geographic
// products with a Matérn product kernel, pinned parameters, the mean-only
// expectation and the count likelihoods. Each must fit and report the
// pinned parameters as fixed.
func TestFitConfigVariants(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if code, _, stderr := runCLI(t, "simulate", "--dir", dir, "--hubs", "3", "--days", "3", "--seed", "5"); code != 0 {
		t.Fatalf("simulate: %s", stderr)
	}
	prods := readCSV(t, filepath.Join(dir, "products.csv"))
	// Geographic products: the simulated metres placed near Manhattan.
	geo := "product,lat,lon\n"
	trans := "from,to,prob\n"
	for i, p := range prods[1:] {
		x, _ := strconv.ParseFloat(p[1], 64)
		y, _ := strconv.ParseFloat(p[2], 64)
		geo += p[0] + "," + strconv.FormatFloat(40.73+y/111195, 'f', 6, 64) + "," + strconv.FormatFloat(-73.99+x/84300, 'f', 6, 64) + "\n"
		next := prods[1+(i+1)%(len(prods)-1)][0]
		trans += p[0] + "," + next + ",0.7\n"
	}
	files := map[string]string{"geo.csv": geo, "trans.csv": trans}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name, products, config, lik, fixed string
	}{
		{"available", "products.csv", "[model.diffusion]\nmode = \"available\"\nlengthscale = 250.0\nsink = 0.2\n", "", "likelihood.lengthscale"},
		{"explicit", "products.csv", "[model.diffusion]\ntransition = \"" + filepath.Join(dir, "trans.csv") + "\"\n[[model.temporal]]\nkernel = \"matern52\"\nfixed_params = [\"variance\"]\n", "", "temporal.variance"},
		{"two steps learned", "products.csv", "[model.diffusion]\nsteps = 2\nlearn = true\nsink = 0.1\n[[model.temporal]]\nkernel = \"matern32\"\nfixed_params = [\"lengthscale\"]\n", "", "temporal.lengthscale"},
		{"geographic", "geo.csv", "[model.product]\nkernel = \"matern32\"\nlengthscale = 400.0\n[model.diffusion]\nlengthscale = 300.0\nexpectation = \"meanonly\"\n", "", "product.variance"},
		{"per product quasiperiodic", "products.csv", "[model]\nper_product = true\nnoise_fixed = true\nnoise_variance = 2.0\n[[model.temporal]]\nkernel = \"quasiperiodic\"\nperiod = 24.0\nharmonics = 2\n", "tobit", "likelihood.variance"},
		{"poisson", "products.csv", "", "poisson", ""},
		{"censored poisson", "products.csv", "", "censored-poisson", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := filepath.Join(dir, "m.toml")
			if err := os.WriteFile(cfg, []byte(c.config), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"fit", "--obs", filepath.Join(dir, "obs.csv"), "--products", filepath.Join(dir, c.products), "--config", cfg, "--out", filepath.Join(dir, "out.csv")}
			if c.lik != "" {
				args = append(args, "--likelihood", c.lik)
			}
			code, _, stderr := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if c.fixed != "" {
				found := false
				for _, line := range strings.Split(stderr, "\n") {
					f := strings.Fields(line)
					if len(f) == 3 && f[0] == c.fixed && f[2] == "(fixed)" {
						found = true
					}
				}
				if !found {
					t.Errorf("%s not reported fixed:\n%s", c.fixed, stderr)
				}
			}
			if post := readCSV(t, filepath.Join(dir, "out.csv")); len(post) < 2 {
				t.Errorf("empty posterior")
			}
		})
	}
}

// TestExampleConfigLoads: the documented daemon configuration at the
// repository root is valid and lists the example model.
func TestExampleConfigLoads(t *testing.T) {
	c, err := config.LoadConfig("../dcgpd.toml")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Models) != 1 || c.Models[0].Name != "bikes" || len(c.Models[0].Product) != 4 || c.Models[0].Bin.Duration != time.Hour {
		t.Fatalf("unexpected example model: %+v", c.Models)
	}
	if _, err := daemon.New(c, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
}

// TestDemo runs the daemon's demo on a small cluster: it reports every
// estimate kind and writes the plot.
func TestDemo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, stdout, stderr := runCLI(t, "demo", "--out", dir, "--hubs", "3", "--days", "3", "--seed", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
	}
	for _, want := range []string{"72 bins", "online filtered", "re-smoothed", "batch CGP", "batch DCGP", "unmet demand", "re-smoothed estimates cover 72 of 72 bins"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	// Every RMSE is a finite number.
	for _, line := range strings.Split(stdout, "\n") {
		for _, name := range []string{"online filtered", "re-smoothed", "batch DCGP"} {
			if strings.HasPrefix(line, fmt.Sprintf("%-16s", name)) {
				f := strings.Fields(strings.TrimPrefix(line, name))
				if len(f) != 3 {
					t.Fatalf("line %q", line)
				}
				for _, s := range f[:2] {
					if v, err := strconv.ParseFloat(s, 64); err != nil || math.IsNaN(v) || !(v > 0 && v < 20) {
						t.Errorf("%s RMSE %q", name, s)
					}
				}
			}
		}
	}
	svg, err := os.ReadFile(filepath.Join(dir, "dcgpd-demo.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(svg, []byte("<svg")) || !bytes.Contains(svg, []byte("inferred latent demand")) {
		t.Errorf("not the demo's SVG plot (%d bytes)", len(svg))
	}
}

// TestServeRejectsBadConfig: serve refuses an invalid configuration with
// the file and line of the offending key, before touching the network.
func TestServeRejectsBadConfig(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile("../dcgpd.toml")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, from, to, want string }{
		{"bad bin", `bin = "1h"`, `bin = "-1h"`, "bin"},
		{"unknown key", `horizon = 6`, `horizon = 6` + "\nhorizons = 3", `unknown key`},
		{"bad level", `level = "info"`, `level = "loud"`, "log.level"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := strings.Replace(string(good), c.from, c.to, 1)
			if body == string(good) {
				t.Fatalf("%q not in dcgpd.toml", c.from)
			}
			line := 1 + strings.Count(body[:strings.Index(body, c.to)], "\n")
			if c.name == "unknown key" {
				line++
			}
			path := filepath.Join(dir, "bad.toml")
			if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := runCLI(t, "serve", "--config", path)
			want := fmt.Sprintf("bad.toml:%d:", line)
			if code != 1 || !strings.Contains(stderr, want) || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want exit 1 and %q … %q", code, stderr, want, c.want)
			}
		})
	}
	if code, _, _ := runCLI(t, "serve"); code != 2 {
		t.Errorf("serve without --config: exit %d, want 2", code)
	}
}

// TestReplayWatchRoundTrip: `replay` publishes a CSV to a daemon started
// in process on an embedded server, and `watch` prints its filtered
// estimates, one line per product, with the forecast of the next bin.
func TestReplayWatchRoundTrip(t *testing.T) {
	t.Parallel()
	d, obs := rtDaemon(t)
	url := d.NATSURL()

	watch := exec.Command(dcgpdPath, "watch", "--nats", url, "--model", "rt", "--kind", "filtered", "--count", "4")
	var wout bytes.Buffer
	watch.Stdout = &wout
	werr, err := watch.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(werr).ReadString('\n'); err != nil || !strings.HasPrefix(line, "watching dcgp.latent.rt") {
		t.Fatalf("watch did not start: %q %v", line, err)
	}
	code, stdout, stderr := runCLI(t, "replay", "--obs", obs, "--model", "rt", "--nats", url)
	if code != 0 || !strings.Contains(stdout, "published 5 messages (4 bins, 6 observations)") {
		t.Fatalf("replay: exit %d, %q %q", code, stdout, stderr)
	}
	done := make(chan error, 1)
	go func() { done <- watch.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
	case <-time.After(30 * time.Second):
		_ = watch.Process.Kill()
		t.Fatalf("watch did not see 4 messages; got:\n%s", wout.String())
	}
	lines := strings.Split(strings.TrimSpace(wout.String()), "\n")
	want := []struct{ time, product, mark string }{
		{"2024-05-01T00:00:00Z", "a", "observed"}, {"2024-05-01T00:00:00Z", "b", "censored"},
		{"2024-05-01T01:00:00Z", "a", "observed"}, {"2024-05-01T01:00:00Z", "b", "unobserved"},
		{"2024-05-01T02:00:00Z", "a", "censored"}, {"2024-05-01T02:00:00Z", "b", "observed"},
		{"2024-05-01T03:00:00Z", "a", "observed"}, {"2024-05-01T03:00:00Z", "b", "unobserved"},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), wout.String())
	}
	for i, w := range want {
		f := strings.Fields(lines[i])
		if len(f) < 13 || f[0] != w.time || f[1] != "rt" || f[2] != "filtered" || f[3] != w.product || f[4] != "mean" || f[10] != w.mark || f[11] != "next" {
			t.Errorf("line %d: %q, want %s %s … %s … next", i, lines[i], w.time, w.product, w.mark)
		}
	}
	if v := d.Runner("rt").View(); v.Status.Bins != 4 {
		t.Errorf("daemon processed %d bins, want 4", v.Status.Bins)
	}
}
