package test

import (
	"bytes"
	"encoding/csv"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// dcgpd builds the command once per test binary.
var dcgpdPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "dcgpd-test")
	if err != nil {
		panic(err)
	}
	dcgpdPath = filepath.Join(dir, "dcgpd")
	out, err := exec.Command("go", "build", "-o", dcgpdPath, "../cmd/dcgpd").CombinedOutput()
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
			if !(v > 0 && pv > v && q05 < m && m < q95) {
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
