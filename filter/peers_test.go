package filter

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dcgpd/dcgpd/filter/kernel"
)

// The W1/W1irr peer workloads (testdata/peers/WORKLOADS.md): a Matérn-3/2
// GP (s2f = 1, ℓ = 5) with Gaussian noise 0.1, solved exactly by
// statsmodels (tolerance = 0), whose lml and posterior are stored here.
const (
	peerS2F, peerEll, peerS2N = 1.0, 5.0, 0.1
)

// readCSVGz reads a gzipped CSV of float columns after a header line.
func readCSVGz(t testing.TB, path string, cols int) [][]float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]float64, cols)
	sc := bufio.NewScanner(zr)
	sc.Scan() // header
	for line := 2; sc.Scan(); line++ {
		fields := strings.Split(sc.Text(), ",")
		if len(fields) != cols {
			t.Fatalf("%s:%d: %d fields, want %d", path, line, len(fields), cols)
		}
		for c, s := range fields {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("%s:%d: %v", path, line, err)
			}
			out[c] = append(out[c], v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func peerLML(t testing.TB, wl string, n int) float64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "peers", fmt.Sprintf("statsmodels_%s_N%d.json", wl, n)))
	if err != nil {
		t.Fatal(err)
	}
	var r struct{ LML float64 }
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r.LML
}

// gaussianSites returns scalar sites for observations y with noise r.
func gaussianSites(y []float64, r float64) *Sites {
	s := NewSites(len(y), 1, false)
	for i, v := range y {
		s.SetGaussian(i, 0, v, r)
	}
	return s
}

func TestPeersW1(t *testing.T) {
	for _, wl := range []string{"W1", "W1irr"} {
		for _, n := range []int{1000, 4000} {
			t.Run(fmt.Sprintf("%s/N=%d", wl, n), func(t *testing.T) {
				data := readCSVGz(t, filepath.Join("testdata", "peers", fmt.Sprintf("data_%s_N%d.csv.gz", wl, n)), 2)
				ref := readCSVGz(t, filepath.Join("testdata", "peers", fmt.Sprintf("statsmodels_%s_N%d.csv.gz", wl, n)), 3)
				k, err := kernel.NewMatern32(peerS2F, peerEll)
				if err != nil {
					t.Fatal(err)
				}
				// Both the unrolled 2-state path (Independent kernel) and the
				// dense path (the same data as a 1-product full site) must
				// match the peer.
				for _, full := range []bool{false, true} {
					m, err := NewModel(k, nil, nil, 1)
					if err != nil {
						t.Fatal(err)
					}
					s := gaussianSites(data[1], peerS2N)
					if full {
						s.Full = true
					}
					var p Posterior
					if err := Smooth(&p, m, data[0], s); err != nil {
						t.Fatal(err)
					}
					lml := peerLML(t, wl, n)
					// WORKLOADS.md: rel. lml ≤ 1e-9, |Δmean| ≤ 1e-9, rel. Δvar ≤ 1e-8.
					if d := math.Abs(p.LogLik-lml) / math.Abs(lml); d > 1e-9 {
						t.Errorf("full=%v: lml %.17g vs statsmodels %.17g (rel %.2g)", full, p.LogLik, lml, d)
					}
					var dm, dv float64
					for i := range ref[1] {
						dm = math.Max(dm, math.Abs(p.Mean[i]-ref[1][i]))
						dv = math.Max(dv, math.Abs(p.Var[i]-ref[2][i])/ref[2][i])
					}
					if dm > 1e-9 || dv > 1e-8 {
						t.Errorf("full=%v: max |Δmean| %.2g, max rel Δvar %.2g", full, dm, dv)
					}
					t.Logf("full=%v: rel lml %.2g, max |Δmean| %.2g, max rel Δvar %.2g", full, math.Abs(p.LogLik-lml)/math.Abs(lml), dm, dv)
				}
			})
		}
	}
}
