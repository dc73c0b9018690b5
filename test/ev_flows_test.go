package test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/stream/evseflow"
	"github.com/dcgpd/dcgpd/stream/ocpi"
)

// evFlowScore compares derived sessions per site-bin with the truth.
type evFlowScore struct {
	cells, unobserved, censoredBelow, possible int
	derived, truth                             [2]int     // started, ended
	se, diff                                   [2]float64 // squared and signed errors
	aboveTruth                                 int        // site-bins whose derived starts exceed the true ones
}

func (s *evFlowScore) String() string {
	n := float64(s.cells)
	return fmt.Sprintf("started %d of %d (bias %+.5f, RMSE %.4f per site-bin); ended %d of %d (bias %+.5f, RMSE %.4f); possible %d; censored below %d, unobserved %d of %d site-bins; starts above the truth in %d",
		s.derived[0], s.truth[0], s.diff[0]/n, math.Sqrt(s.se[0]/n), s.derived[1], s.truth[1], s.diff[1]/n, math.Sqrt(s.se[1]/n),
		s.possible, s.censoredBelow, s.unobserved, s.cells, s.aboveTruth)
}

// TestEVSEFlows measures the sessions evseflow derives from EVSE status
// against the true ones, on examples/ev-5min: its served sessions as
// EVSE status (evse.csv, charging.Outcome.EVSEStatus), polled every 30
// s, 1 min and 5 min over the 14 days (max_gap twice the interval; the
// polls 0.4 of an interval off the bins' edges), each poll reading every
// EVSE's status at its time; once with OCPI's
// last_updated (the time of the change) and once with a feed whose
// last_updated never moves (each change placed at the poll that saw
// it). Per 5-minute site-bin: bias and RMSE of the derived starts and
// ends. It asserts what the package says: with last_updated the starts
// are lower bounds in every site-bin and the truth lies within
// [derived, derived + possible] in total; the true starts are the
// example's served counts.
func TestEVSEFlows(t *testing.T) {
	o, cfg, err := ev5minOutcome()
	if err != nil {
		t.Fatal(err)
	}
	events, err := o.EVSEStatus(cfg.Start)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := ev5minExample()
	if err != nil {
		t.Fatal(err)
	}
	sites := make([]string, len(tb.Sites))
	for k, s := range tb.Sites {
		sites[k] = s.Name
	}
	nb := cfg.Days * 288
	truth := evTrueFlows(t, events, cfg.Start, sites, nb)
	for b := range nb {
		for k := range sites {
			if truth[b][k][0] != tb.Cells[b][k].Served {
				t.Fatalf("bin %d %s: %d sessions start in the status, the example served %d", b, sites[k], truth[b][k][0], tb.Cells[b][k].Served)
			}
		}
	}
	var rec strings.Builder
	fmt.Fprintf(&rec, "# examples/ev-5min's sessions as EVSE status, polled; per 5-minute site-bin, derived against true (go test ./test/ -run TestEVSEFlows)\n")
	for _, every := range []time.Duration{30 * time.Second, time.Minute, 5 * time.Minute} {
		for _, stamped := range []bool{true, false} {
			s := evPollFlows(t, events, cfg.Start, sites, nb, every, stamped, truth)
			what := map[bool]string{true: "last_updated", false: "poll time only"}[stamped]
			line := fmt.Sprintf("every %v, %s: %s", every, what, s)
			t.Log(line)
			rec.WriteString(line + "\n")
			if stamped && (s.aboveTruth > 0 || s.derived[0] > s.truth[0] || s.truth[0] > s.derived[0]+s.possible) {
				t.Errorf("every %v with last_updated: %d site-bins above the truth; in all %d derived, %d true, %d possible (want derived <= true <= derived + possible)",
					every, s.aboveTruth, s.derived[0], s.truth[0], s.possible)
			}
		}
	}
	recordFigures(t, rec.String())
}

// evTrueFlows counts the sessions started and ended per bin and site in
// the status events (CHARGING starts one, AVAILABLE after it ends it).
func evTrueFlows(t *testing.T, events []ocpi.StatusEvent, start time.Time, sites []string, nb int) [][][2]int {
	t.Helper()
	idx := map[string]int{}
	for k, s := range sites {
		idx[s] = k
	}
	out := make([][][2]int, nb)
	for b := range out {
		out[b] = make([][2]int, len(sites))
	}
	busy := map[string]bool{}
	for _, e := range events {
		b := int(e.At.Sub(start) / (5 * time.Minute))
		key := e.Site + "/" + e.EVSE
		switch {
		case e.Status == ocpi.StatusCharging:
			busy[key] = true
			out[b][idx[e.Site]][0]++
		case busy[key] && b < nb:
			busy[key] = false
			out[b][idx[e.Site]][1]++
		}
	}
	return out
}

// evPollFlows polls the status every interval from start and scores the
// derived flows against truth.
func evPollFlows(t *testing.T, events []ocpi.StatusEvent, start time.Time, sites []string, nb int, every time.Duration, stamped bool, truth [][][2]int) *evFlowScore {
	t.Helper()
	d, err := evseflow.New(evseflow.Config{Origin: start, Bin: 5 * time.Minute, MaxGap: 2 * every}, sites)
	if err != nil {
		t.Fatal(err)
	}
	end := start.Add(time.Duration(nb) * 5 * time.Minute)
	state := map[string]ocpi.StatusEvent{}
	var order []string
	next := 0
	var bins []evseflow.Bin
	// The poller's clock is not the bins': polls 0.4 of an interval
	// after each multiple of it, so an interval can straddle a bin's edge.
	for p := start.Add(every * 2 / 5); !p.After(end.Add(every)); p = p.Add(every) {
		for ; next < len(events) && !events[next].At.After(p); next++ {
			e := events[next]
			key := e.Site + "/" + e.EVSE
			if _, ok := state[key]; !ok {
				order = append(order, key)
			}
			if !stamped {
				e.At = start.Add(-time.Hour)
			}
			state[key] = e
		}
		read := make([]ocpi.StatusEvent, 0, len(order))
		for _, key := range order {
			read = append(read, state[key])
		}
		if err := d.Poll(p, read); err != nil {
			t.Fatal(err)
		}
		bins = append(bins, d.Advance(p)...)
	}
	if len(bins) != nb*len(sites) {
		t.Fatalf("every %v: %d site-bins emitted, want %d", every, len(bins), nb*len(sites))
	}
	s := &evFlowScore{}
	for i, x := range bins {
		b, k := i/len(sites), i%len(sites)
		s.cells++
		if !x.Observed {
			s.unobserved++
		}
		if x.CensoredBelow {
			s.censoredBelow++
		}
		s.possible += x.Possible
		for j, got := range [2]int{x.Started, x.Ended} {
			want := truth[b][k][j]
			s.derived[j] += got
			s.truth[j] += want
			s.diff[j] += float64(got - want)
			s.se[j] += float64((got - want) * (got - want))
		}
		if x.Started > truth[b][k][0] {
			s.aboveTruth++
		}
	}
	return s
}
