package inventory

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// referenceFile holds the reference's outlook of every station of
// accStations, one line each: the station's name, then the flattened
// outlook (flatten) in full precision. TestWriteReference writes it;
// TestStoredReferenceIsCurrent checks a sample of it against the
// reference code.
const referenceFile = "testdata/reference.txt"

// TestWriteSampledReference appends to referenceSampledFile the sampled
// reference of the ρ = 0.5 stations, each with the largest standard
// error of its probabilities and of its counts relative to max(count,
// 1): DCGPD_WRITE_REFERENCE=1 go test ./inventory/ -run TestWriteSampledReference.
func TestWriteSampledReference(t *testing.T) {
	if os.Getenv("DCGPD_WRITE_REFERENCE") != "1" {
		t.Skip("DCGPD_WRITE_REFERENCE=1 rewrites " + referenceSampledFile)
	}
	out, err := os.Create(referenceSampledFile)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	for i, a := range accStations() {
		if a.rho != 0.5 {
			continue
		}
		ref, se := referenceSampled(t, a.st, a.lf, a.mf, a.rho, 50, 8, uint64(i+1))
		h := len(a.lf.Mean)
		var sp, sc float64
		for j, s := range se {
			if j < 2*h {
				sp = max(sp, s)
			} else if j >= 4*h {
				sc = max(sc, s/max(ref[j], 1))
			}
		}
		var b strings.Builder
		b.WriteString(a.name())
		fmt.Fprintf(&b, " se %g %g", sp, sc)
		for _, v := range ref {
			b.WriteString(" " + strconv.FormatFloat(v, 'g', -1, 64))
		}
		b.WriteString("\n")
		if _, err := out.WriteString(b.String()); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s done: SE %.5f on probabilities, %.4f%% on counts", a.name(), sp, 100*sc)
	}
}

// referenceSampledFile holds the sampled reference of the ρ = 0.5
// stations (see TestWriteSampledReference).
const referenceSampledFile = "testdata/reference_sampled.txt"

// TestWriteReference recomputes the reference for every station of the
// accuracy table (minutes) and rewrites referenceFile:
// DCGPD_WRITE_REFERENCE=1 go test ./inventory/ -run TestWriteReference.
func TestWriteReference(t *testing.T) {
	if os.Getenv("DCGPD_WRITE_REFERENCE") != "1" {
		t.Skip("DCGPD_WRITE_REFERENCE=1 rewrites " + referenceFile)
	}
	if err := os.MkdirAll(filepath.Dir(referenceFile), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(referenceFile)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	for _, a := range accStations() {
		var b strings.Builder
		if a.rho != 0 && a.rho != 1 {
			continue // see referenceRisk: ρ = 0.5 is not resolved
		}
		ref := referenceRisk(t, refDefault, a.st, a.lf, a.mf, a.rho)
		b.WriteString(a.name())
		for _, v := range ref {
			b.WriteString(" " + strconv.FormatFloat(v, 'g', -1, 64))
		}
		b.WriteString("\n")
		if _, err := out.WriteString(b.String()); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s done", a.name())
	}
}

// readReference returns the outlooks of referenceFile and
// referenceSampledFile by station name (accStation.name, spaces
// collapsed), and the sampled ones' largest standard errors.
func readReference(t *testing.T) (map[string][]float64, map[string][2]float64) {
	t.Helper()
	out, se := map[string][]float64{}, map[string][2]float64{}
	for _, path := range []string{referenceFile, referenceSampledFile} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (DCGPD_WRITE_REFERENCE=1 go test ./inventory/ -run 'TestWrite.*Reference' writes it)", err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			fields := strings.Fields(line)
			if len(fields) < 6 {
				t.Fatalf("%s: short line %q", path, line)
			}
			name := strings.Join(fields[:5], " ")
			fields = fields[5:]
			if fields[0] == "se" {
				a, err1 := strconv.ParseFloat(fields[1], 64)
				b, err2 := strconv.ParseFloat(fields[2], 64)
				if err1 != nil || err2 != nil {
					t.Fatalf("%s: %s: bad standard errors", path, name)
				}
				se[name] = [2]float64{a, b}
				fields = fields[3:]
			}
			v := make([]float64, len(fields))
			for i, s := range fields {
				if v[i], err = strconv.ParseFloat(s, 64); err != nil {
					t.Fatalf("%s: %s: %v", path, name, err)
				}
			}
			out[name] = v
		}
	}
	return out, se
}

// normName collapses a station name's spaces as readReference does.
func normName(s string) string { return strings.Join(strings.Fields(s), " ") }
