package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/dcgpd/dcgpd/stream/csvio"
	"github.com/dcgpd/dcgpd/stream/natsio"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// runReplay publishes an observations CSV to a daemon's input subject as
// bin messages (or one message per observation).
func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dcgpd replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	obsPath := fs.String("obs", "", "observations CSV: time,product,demand,supply[,censored] (required); numeric times are hours since the Unix epoch")
	model := fs.String("model", "", "model name: publishes to <prefix>.obs.<model> (required)")
	url := natsURLFlag(fs)
	prefix := fs.String("prefix", "dcgp", "subject prefix (the daemon's nats.prefix)")
	speed := fs.Float64("speed", 0, "bins per second of wall time; 0 sends as fast as the server acknowledges")
	single := fs.Bool("single", false, "one message per observation instead of one per bin")
	bin := fs.Duration("bin", time.Hour, "bin width (the model's bin); rows are grouped into bins from --origin")
	originText := fs.String("origin", "1970-01-01T00:00:00Z", "bin origin, RFC 3339 (the model's origin)")
	watermark := fs.Bool("watermark", true, "finish with a watermark at the last bin's end so it closes even with products missing")
	untilText := fs.String("until", "", "publish only the bins that start before this time, RFC 3339 (empty: all), e.g. a history before a live feed takes over")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	*url = natsURL(*url)
	if *obsPath == "" || *model == "" {
		fmt.Fprintln(stderr, "dcgpd replay: --obs and --model are required")
		fs.Usage()
		return errUsage
	}
	if *bin <= 0 || *speed < 0 || math.IsNaN(*speed) {
		fmt.Fprintln(stderr, "dcgpd replay: --bin must be positive and --speed >= 0")
		return errUsage
	}
	origin, err := time.Parse(time.RFC3339, *originText)
	if err != nil {
		return fmt.Errorf("--origin: %w", err)
	}
	obs, err := readObs(*obsPath)
	if err != nil {
		return err
	}
	bins, nObs, err := replayBins(obs, origin, *bin)
	if err != nil {
		return err
	}
	if *untilText != "" {
		until, err := time.Parse(time.RFC3339, *untilText)
		if err != nil {
			return fmt.Errorf("--until: %w", err)
		}
		bins, nObs = binsBefore(bins, until)
	}
	nc, err := connectClient(*url, "dcgpd replay", nats.MaxReconnects(nats.DefaultMaxReconnect))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	began := time.Now()
	res, err := natsio.Replay(ctx, js, *model, bins, natsio.ReplayOptions{Prefix: *prefix, Speed: *speed, Width: *bin, Single: *single, Watermark: *watermark})
	if err != nil {
		return fmt.Errorf("after %d messages sent (%d stored, %d duplicates): %w", res.Sent, res.Stored, res.Duplicates, err)
	}
	fmt.Fprintf(stdout, "published %d messages (%d bins, %d observations) to %s.obs.%s in %.2fs: %d stored, %d duplicates\n",
		res.Sent, len(bins), nObs, *prefix, *model, time.Since(began).Seconds(), res.Stored, res.Duplicates)
	if res.Duplicates > 0 {
		what := fmt.Sprintf("%d of %d messages were", res.Duplicates, res.Sent)
		if res.Stored == 0 {
			what = fmt.Sprintf("all %d messages were", res.Sent)
		}
		fmt.Fprintf(stderr, "dcgpd replay: %s duplicates of ones the stream already holds (same Nats-Msg-Id inside its duplicate window) and were dropped", what)
		if res.Stored == 0 {
			fmt.Fprint(stderr, ": nothing new was stored")
		}
		fmt.Fprintln(stderr)
	}
	return nil
}

// replayBins groups the rows into bins of width from origin, in time
// order. Two rows of one product in one bin are an error (aggregate
// them first): the daemon would refuse the second as a conflicting
// duplicate.
func replayBins(o *csvio.Obs, origin time.Time, width time.Duration) ([]natsio.ReplayBin, int, error) {
	var bins []natsio.ReplayBin
	seen := map[string]int{} // product → line, within the current bin
	n := 0
	for _, r := range o.Rows {
		t, err := rowTime(r, o.Kind)
		if err != nil {
			return nil, 0, fmt.Errorf("%s:%d: %w", o.Name, r.Line, err)
		}
		k := t.Sub(origin) / width
		if t.Before(origin.Add(k * width)) {
			k-- // floor for times before the origin
		}
		start := origin.Add(k * width).UTC()
		if len(bins) == 0 || !bins[len(bins)-1].Start.Equal(start) {
			bins = append(bins, natsio.ReplayBin{Start: start})
			clear(seen)
		}
		if line, dup := seen[r.Product]; dup {
			return nil, 0, fmt.Errorf("%s:%d: product %q already has a row (line %d) in the bin starting %s; aggregate rows to the bin width %v first",
				o.Name, r.Line, r.Product, line, start.Format(time.RFC3339), width)
		}
		seen[r.Product] = r.Line
		ob := wire.Observation{Product: r.Product}
		if !math.IsInf(r.Supply, 1) {
			u := r.Supply
			ob.Supply = &u
		}
		if !math.IsNaN(r.Demand) {
			y, c := r.Demand, r.Censored
			ob.Demand, ob.Censored = &y, &c
			n++
		}
		b := &bins[len(bins)-1]
		b.Observations = append(b.Observations, ob)
	}
	return bins, n, nil
}

// binsBefore keeps the bins that start before until and counts their
// observations with a demand.
func binsBefore(bins []natsio.ReplayBin, until time.Time) ([]natsio.ReplayBin, int) {
	n := 0
	for i, b := range bins {
		if !b.Start.Before(until) {
			bins = bins[:i]
			break
		}
		for _, ob := range b.Observations {
			if ob.Demand != nil {
				n++
			}
		}
	}
	return bins, n
}

// rowTime is a row's time: timestamps as written (RFC 3339, or ISO 8601
// local read as UTC), numbers as hours since the Unix epoch (the model
// time unit).
func rowTime(r csvio.Row, kind csvio.TimeKind) (time.Time, error) {
	if kind == csvio.Timestamp {
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04Z07:00", "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04"} {
			if t, err := time.Parse(layout, r.TimeText); err == nil {
				return t.UTC(), nil
			}
		}
	}
	ns := r.Time * float64(time.Hour)
	if math.Abs(ns) > math.MaxInt64/2 {
		return time.Time{}, fmt.Errorf("time %q is out of range", r.TimeText)
	}
	return time.Unix(0, int64(math.Round(ns))).UTC(), nil
}
