package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/cvi/spec"
	"github.com/dcgpd/dcgpd/internal/app/backtest"
	"github.com/dcgpd/dcgpd/internal/app/synth"
	"github.com/dcgpd/dcgpd/inventory"
)

// decisionMode removes --decision from args and reports whether it was
// there: `dcgpd backtest --decision ...` is the decision backtest.
func decisionMode(args []string) ([]string, bool) {
	for i, a := range args {
		if a == "--decision" || a == "-decision" {
			return append(append([]string(nil), args[:i]...), args[i+1:]...), true
		}
	}
	return args, false
}

// decisionFlags are `dcgpd backtest --decision`'s flags.
type decisionFlags struct {
	dir, counts, cfgPath, stations *string
	clusters                       *int
	train, eval, end               *string
	dayStart                       *int
	seed                           *uint64
	low, high, shared              *float64
	resmooth                       *int
	quiet                          *bool
}

// newDecisionFlags declares `dcgpd backtest --decision`'s flags on fs.
func newDecisionFlags(fs *flag.FlagSet) *decisionFlags {
	return &decisionFlags{
		dir:      fs.String("citibike", "", "directory with stations.csv (station,name,lat,lon,capacity) and, unless --counts, counts_2018.csv (required)"),
		counts:   fs.String("counts", "", "hourly counts CSV (time,station,pickups,dropoffs) covering --train to --end (default: counts_2018.csv in --citibike)"),
		cfgPath:  fs.String("config", "", "model TOML of each flow, learned on the training span (required; e.g. examples/citibike-hourly/model.toml)"),
		stations: fs.String("stations", "", "comma-separated station ids of one cluster (default: --clusters clusters of 10 neighbouring stations)"),
		clusters: fs.Int("clusters", 3, "number of clusters of 10 neighbouring stations when --stations is not given"),
		train:    fs.String("train", "2018-06-01", "first day of the training span"),
		eval:     fs.String("eval", "2018-08-01", "first operating day scored (the training span ends here)"),
		end:      fs.String("end", "2018-09-01", "day after the last operating day scored"),
		dayStart: fs.Int("day-start", 6, "hour at which each operating day (24 bins) starts and the stock is set"),
		seed:     fs.Uint64("seed", 2018, "seed of the history's restocking, riders moving on and within-hour order"),
		low:      fs.Float64("restock-low", 0.3, "the history restocks each day at --day-start to U(low, high)·capacity"),
		high:     fs.Float64("restock-high", 0.8, "see --restock-low"),
		shared:   fs.Float64("shared", inventory.DefaultConfig().Shared, "fraction of the forecast variance shared by all bins of a flow"),
		resmooth: fs.Int("resmooth-every", 24, "re-smooth every this many bins as the daemon would (0: off)"),
		quiet:    fs.Bool("quiet", false, "no progress on standard error"),
	}
}

// days checks the flags and returns the training start, the first
// operating day and the day after the last.
func (f *decisionFlags) days(fs *flag.FlagSet, stderr io.Writer) ([3]time.Time, error) {
	var days [3]time.Time
	if *f.dir == "" || *f.cfgPath == "" {
		fmt.Fprintln(stderr, "dcgpd backtest --decision: --citibike and --config are required")
		fs.Usage()
		return days, errUsage
	}
	if !(*f.low >= 0 && *f.low <= *f.high && *f.high <= 1) || *f.resmooth < 0 || *f.clusters < 1 {
		fmt.Fprintln(stderr, "dcgpd backtest --decision: want 0 <= --restock-low <= --restock-high <= 1, --resmooth-every >= 0, --clusters >= 1")
		return days, errUsage
	}
	for i, s := range []string{*f.train, *f.eval, *f.end} {
		d, err := time.Parse("2006-01-02", s)
		if err != nil {
			return days, fmt.Errorf("--train, --eval, --end: %w", err)
		}
		days[i] = d
	}
	if !days[0].Before(days[1]) || !days[1].Before(days[2]) {
		return days, fmt.Errorf("want --train < --eval < --end, got %s, %s, %s", *f.train, *f.eval, *f.end)
	}
	return days, nil
}

// runDecisionBacktest is `dcgpd backtest --decision`: on the operating
// days of a held-out span, stock each station at s* from dcgpd's
// pickups and returns forecasts, from the baselines' rates and in
// hindsight, replay the real trips and count the unmet ones
// (internal/app/backtest.RunDecision).
func runDecisionBacktest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dcgpd backtest --decision", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := newDecisionFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	days, err := f.days(fs, stderr)
	if err != nil {
		return err
	}
	clusters, err := decisionClusters(*f.dir, *f.stations, *f.clusters)
	if err != nil {
		return err
	}
	sp, err := spec.Load(*f.cfgPath)
	if err != nil {
		return err
	}
	pc := inventory.DefaultConfig()
	pc.Shared = *f.shared
	rs := config.DefaultModelConfig().Resmooth
	rs.EveryBins = *f.resmooth
	for _, cl := range clusters {
		// The last operating day ends at --day-start the day after --end.
		d, transfer, err := backtest.CitiBikeStationsFrom(*f.dir, *f.counts, cl.Stations, days[0], days[2].Add(24*time.Hour))
		if err != nil {
			return err
		}
		o := backtest.DecisionOptions{Spec: sp, Data: d, EvalFrom: days[1], End: days[2].Add(24 * time.Hour), DayStart: *f.dayStart,
			World:   backtest.WorldConfig{Seed: *f.seed, RestockHour: *f.dayStart, Low: *f.low, High: *f.high, Transfer: transfer},
			Planner: pc, Horizons: []int{1, 3, 6, 12, 24}, Weeks: 4, Resmooth: &rs}
		if !*f.quiet {
			name := cl.Name
			o.Progress = func(s string) { fmt.Fprintf(stderr, "%s: %s\n", name, s) }
		}
		res, err := o.RunDecision(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", cl.Name, err)
		}
		if err := writeDecision(stdout, res, cl.Name); err != nil {
			return err
		}
	}
	return nil
}

// writeDecision writes one cluster's decision backtest: the unmet trips
// per policy with the share of the gap closed, the Brier scores and
// reliability of P(empty) and P(full), and both flows' forecast scores
// on the same span.
func writeDecision(w io.Writer, res *backtest.DecisionResult, name string) error {
	if err := res.WriteDecisionTable(w, name); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if err := res.WriteCalibration(w); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		r    *backtest.Report
	}{{"Pickups", res.PickupsReport}, {"Returns", res.ReturnsReport}} {
		if f.r == nil {
			continue
		}
		fmt.Fprintf(w, "\n%s: %s forecasts against the baselines:\n", name, f.name)
		if err := f.r.WriteTable(w); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(w)
	return err
}

// decisionClusters is the named stations as one cluster, or n clusters
// of ten neighbouring stations.
func decisionClusters(dir, ids string, n int) ([]synth.BikeCluster, error) {
	if ids != "" {
		var cl synth.BikeCluster
		for _, f := range strings.Split(ids, ",") {
			id, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return nil, fmt.Errorf("--stations: %q is not a station id", f)
			}
			cl.Stations = append(cl.Stations, id)
		}
		cl.Name = "stations-" + strconv.Itoa(cl.Stations[0])
		return []synth.BikeCluster{cl}, nil
	}
	st, err := synth.ReadBikeStations(dir)
	if err != nil {
		return nil, err
	}
	return synth.NeighbourClusters(st, n, 10)
}
