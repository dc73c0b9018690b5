package snapshot

import (
	"fmt"
	"io"
	"time"
)

// Describe writes a readable summary of what m holds (for `dcgpd
// snapshot inspect`).
func Describe(w io.Writer, m *Model, size int) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	p("model            %s (%d products: %s)", m.Name, len(m.Products), list(m.Products, 8))
	p("format           version %d, %d bytes", Version, size)
	p("bins             width %v from %s; %d processed", m.BinWidth, ts(m.Origin), m.Processed)
	p("input            applied up to stream sequence %d (stream created %s)", m.Applied, ts(m.Stream))
	p("hyperparameters  %d model, %d likelihood (raw): %v %v", len(m.ModelParams), len(m.LikParams), m.ModelParams, m.LikParams)
	if m.Online.Filter.Started {
		p("filter head      t = %.6g h, %d chains, state %d", m.Online.Filter.Time, len(m.Online.Filter.Mean), stateDim(&m.Online.Filter))
	} else {
		p("filter head      at the prior")
	}
	if len(m.Window) > 0 {
		p("window           %d bins, %s to %s", len(m.Window), ts(m.Window[0].Start), ts(m.Window[len(m.Window)-1].Start))
	} else {
		p("window           empty")
	}
	a := &m.Assembler
	clock := "none"
	if a.ClockSet {
		clock = ts(a.Clock)
	}
	p("assembly         next bin %d, clock %s, %d open bins", a.Next, clock, len(a.Open))
	p("re-smooths       %d swapped in, %d bins since the last", m.Revision, m.SinceResmooth)
	if j := m.Job; j != nil {
		p("running job      %d bins, applied before bin %d, relearn %v", len(j.Bins), j.ApplyAt, j.Relearn)
	}
	p("latest estimate  %d bytes", len(m.Latest))
	if len(m.ConfigDigest) > 0 {
		p("model digest     %.8x", m.ConfigDigest)
	} else {
		p("model digest     none (written before digests)")
	}
}

func ts(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339) }

func stateDim(f *Filter) int {
	n := 0
	for _, m := range f.Mean {
		n += len(m)
	}
	return n
}

func list(s []string, n int) string {
	if len(s) <= n {
		return fmt.Sprint(s)
	}
	return fmt.Sprint(s[:n]) + fmt.Sprintf(" and %d more", len(s)-n)
}
