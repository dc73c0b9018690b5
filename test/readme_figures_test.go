package test

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// readmeNowcastHeader names the column of README.md's held-out Citi Bike
// table that quotes the censored-hour nowcast RMSE: the shipped model's
// `demand`, then (the comparison model's latent mean; the censored
// observation).
const readmeNowcastHeader = "censored-hour `demand` RMSE"

// readmeNowcastCell is that column's cell: "17.6 (18.1; 23.1)".
var readmeNowcastCell = regexp.MustCompile(`^([0-9.]+) \(([0-9.]+); ([0-9.]+)\)$`)

// readmeNowcast returns the three figures README.md's held-out table
// quotes for a cluster (its name's number, "499" for citibike-499), as
// written: the shipped model's nowcast, the comparison model's and the
// censored observation's.
func readmeNowcast(readme, cluster string) ([3]string, error) {
	var got [3]string
	lines := strings.Split(readme, "\n")
	col := -1
	for _, l := range lines {
		cells := tableCells(l)
		if col < 0 {
			for i, c := range cells {
				if strings.HasPrefix(c, readmeNowcastHeader) {
					col = i
				}
			}
			continue
		}
		if len(cells) == 0 {
			break // the table ended without the cluster's row
		}
		if cells[0] != cluster {
			continue
		}
		if col >= len(cells) {
			return got, fmt.Errorf("README.md: the row of %s has %d cells, the nowcast is column %d", cluster, len(cells), col+1)
		}
		m := readmeNowcastCell.FindStringSubmatch(cells[col])
		if m == nil {
			return got, fmt.Errorf("README.md: the nowcast of %s is %q, want \"SHIPPED (COMPARISON; OBSERVED)\"", cluster, cells[col])
		}
		copy(got[:], m[1:])
		return got, nil
	}
	if col < 0 {
		return got, fmt.Errorf("README.md: no table with a column %q", readmeNowcastHeader)
	}
	return got, fmt.Errorf("README.md: no row for cluster %s in the held-out table", cluster)
}

// tableCells splits a Markdown table row into its trimmed cells (none
// for a line that is not a row).
func tableCells(line string) []string {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") || len(line) < 2 {
		return nil
	}
	cells := strings.Split(line[1:len(line)-1], "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

// quotedAs reports whether quoted (a figure as a document writes it) is
// measured rounded to quoted's decimals: within half a unit of its last
// digit.
func quotedAs(measured float64, quoted string) bool {
	q, err := strconv.ParseFloat(quoted, 64)
	if err != nil {
		return false
	}
	decimals := 0
	if _, frac, ok := strings.Cut(quoted, "."); ok {
		decimals = len(frac)
	}
	return math.Abs(measured-q) <= 0.5*math.Pow(10, -float64(decimals))+1e-12
}

// checkReadmeNowcast asserts that README.md quotes, for cluster, the
// nowcast RMSEs TestLongBacktestCitiBike measured, each rounded as
// written: the shipped model's realised demand on censored cells, the
// comparison model's latent mean (its published nowcast) and the censored
// observation.
func checkReadmeNowcast(t *testing.T, cluster string, rows, today map[string]btScore) {
	t.Helper()
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	quoted, err := readmeNowcast(string(raw), strings.TrimPrefix(cluster, "citibike-"))
	if err != nil {
		t.Fatal(err)
	}
	measured := [3]float64{rows["dcgpd/censored/0"].rmse, today["dcgpd-latent/censored/0"].rmse, rows["observed/censored/0"].rmse}
	names := [3]string{"shipped model's realised demand", "comparison model's latent mean", "censored observation"}
	for i := range quoted {
		if !quotedAs(measured[i], quoted[i]) {
			t.Errorf("README.md quotes %s for the %s's nowcast RMSE on %s; measured %.3f: update the README", quoted[i], names[i], cluster, measured[i])
		}
	}
}

// TestReadmeNowcastQuoted: README.md's held-out Citi Bike table has a
// nowcast cell of the form checkReadmeNowcast reads for each of the three
// clusters, and the rounding check accepts a figure within half a unit of
// its last digit and refuses one beyond it.
func TestReadmeNowcastQuoted(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"499", "327", "504"} {
		q, err := readmeNowcast(string(raw), c)
		if err != nil {
			t.Error(err)
			continue
		}
		t.Logf("cluster %s: README quotes %v", c, q)
	}
	if _, err := readmeNowcast(string(raw), "999"); err == nil {
		t.Error("a cluster the table does not have was found")
	}
	for _, c := range []struct {
		measured float64
		quoted   string
		ok       bool
	}{{17.631, "17.6", true}, {18.145, "18.1", true}, {17.66, "17.6", false}, {14.199, "14.20", true}, {14.206, "14.20", false}, {9.083, "9.08", true}, {9.0751, "9.08", true}, {9.0749, "9.08", false}} {
		if got := quotedAs(c.measured, c.quoted); got != c.ok {
			t.Errorf("quotedAs(%v, %q) = %v, want %v", c.measured, c.quoted, got, c.ok)
		}
	}
}
