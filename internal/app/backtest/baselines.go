package backtest

import "math"

// A forecaster predicts cell (t+h, k) from what was observed up to bin t
// (the origin): a Gaussian N(mean, sd²); sd 0 is a point forecast. It
// returns NaN when it has nothing to go on.
type forecaster interface {
	name() string
	predict(t, h, k int) (mean, sd float64)
}

// season holds the seasonal lags of the baselines in bins.
type season struct {
	g         *Grid
	day, week int
}

// seasonalNaive is the same bin a week before the target (the last one
// observed at the origin).
type seasonalNaive struct{ season }

func (seasonalNaive) name() string { return "seasonal-naive" }

func (b seasonalNaive) predict(t, h, k int) (float64, float64) {
	s := t + h - b.week*ceilDiv(h, b.week)
	if s < 0 {
		return math.NaN(), 0
	}
	return b.g.Y[s][k], 0
}

// historicalMean is HM(C1,P1,T3), the UCTB benchmark's best hourly
// configuration: the mean of the last bin t (C1), the target's bin of the
// day in the last day before t (P1) and the target's bin of the week in
// each of the last three weeks before t (T3), missing values left out;
// its spread is the sample standard deviation of those values. P1 and T3
// are taken strictly before t, so that at h = 24 (or h = 168) the origin,
// already C1, is not counted a second time: the five bins are distinct
// for every h below 144 (from there P1 may be T3's first bin, then taken
// once).
type historicalMean struct{ season }

func (historicalMean) name() string { return "hm-c1p1t3" }

func (b historicalMean) predict(t, h, k int) (float64, float64) {
	var vals [5]float64
	var bins [5]int
	n := 0
	add := func(s int) {
		if s < 0 || s > t || math.IsNaN(b.g.Y[s][k]) {
			return
		}
		for _, x := range bins[:n] {
			if x == s {
				return
			}
		}
		bins[n], vals[n] = s, b.g.Y[s][k]
		n++
	}
	add(t)
	add(lastBefore(t, t+h, b.day))
	w := lastBefore(t, t+h, b.week)
	for j := 0; j < 3; j++ {
		add(w - j*b.week)
	}
	return meanSD(vals[:n])
}

// lastBefore is the latest bin strictly before t that is a whole number
// of periods before target (target > t).
func lastBefore(t, target, period int) int {
	return target - period*((target-t)/period+1)
}

// binOfWeekMean is the mean of the target's bin of the week over the last
// K weeks, uncensored observations only (a cheap de-censoring); with none
// uncensored it takes the censored ones. Its spread is their sample
// standard deviation.
type binOfWeekMean struct {
	season
	k int
}

func (binOfWeekMean) name() string { return "bow-mean" }

func (b binOfWeekMean) predict(t, h, k int) (float64, float64) {
	w := t + h - b.week*ceilDiv(h, b.week)
	var clean, all []float64
	for j := 0; j < b.k; j++ {
		s := w - j*b.week
		if s < 0 {
			break
		}
		y := b.g.Y[s][k]
		if math.IsNaN(y) {
			continue
		}
		all = append(all, y)
		if !b.g.Censored[s][k] {
			clean = append(clean, y)
		}
	}
	if len(clean) == 0 {
		clean = all
	}
	return meanSD(clean)
}

// meanSD returns the mean and sample standard deviation (0 for one
// value; NaN mean for none).
func meanSD(v []float64) (float64, float64) {
	if len(v) == 0 {
		return math.NaN(), 0
	}
	var s float64
	for _, x := range v {
		s += x
	}
	m := s / float64(len(v))
	if len(v) == 1 {
		return m, 0
	}
	var ss float64
	for _, x := range v {
		ss += (x - m) * (x - m)
	}
	return m, math.Sqrt(ss / float64(len(v)-1))
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
