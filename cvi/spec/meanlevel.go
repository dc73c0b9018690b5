package spec

import (
	"math"
	"slices"

	"github.com/dcgpd/dcgpd/cvi"
)

// Levels of the prior mean ([model.mean] level).
const (
	// LevelFixed keeps m as fitted (the default).
	LevelFixed = "fixed"
	// LevelScale scales each product's profile by a level re-estimated
	// from the data at every re-smooth.
	LevelScale = "scale"
)

// Bounds of a product's level s_k (EstimateScale): a station closed for a
// week, or one whose demand multiplies, stays within them.
const (
	MinLevelScale = 0.05
	MaxLevelScale = 20
)

// FollowsLevel reports whether the daemon re-estimates the level of the
// prior mean (level = "scale").
func (m Mean) FollowsLevel() bool { return m.On() && m.Level == LevelScale }

// Scaled returns a profile whose row k is s[k] times p's (p itself for a
// nil p or a nil s).
func (p *Profile) Scaled(s []float64) *Profile {
	if p == nil || s == nil {
		return p
	}
	out := &Profile{Step: p.Step, Cells: p.Cells, M: make([][]float64, len(p.M))}
	for k, row := range p.M {
		out.M[k] = make([]float64, len(row))
		for c, v := range row {
			out.M[k][c] = s[k] * v
		}
	}
	return out
}

// EstimateScale writes into dst each product's level against the fitted
// profile p: s_k = Σ f(t, k) / Σ p.At(t, k), sums over the bins where
// product k is observed (obs[n·NP+k].Y not NaN), f the smoothed posterior
// mean of the demand (index n·NP + k, the prior mean added back), so a
// censored hour counts with its censoring-aware estimate, not its
// observation. Over a week of hourly bins every hour of the week counts
// once: s_k is the ratio of the week's demand to the fitted week's. A
// product with no observed bin, or whose fitted sum is not positive,
// keeps prev[k] (1 when prev is nil); s_k is clamped to [MinLevelScale,
// MaxLevelScale].
func (p *Profile) EstimateScale(times []float64, obs []cvi.Obs, f []float64, np int, prev, dst []float64) {
	for k := range np {
		var sf, sm float64
		for n, t := range times {
			if math.IsNaN(obs[n*np+k].Y) {
				continue
			}
			sf += f[n*np+k]
			sm += p.At(t, k)
		}
		s := 1.0
		if prev != nil {
			s = prev[k]
		}
		if sm > 0 && !math.IsNaN(sf) && !math.IsInf(sf, 0) {
			s = math.Min(math.Max(sf/sm, MinLevelScale), MaxLevelScale)
		}
		dst[k] = s
	}
}

// SetMeanScale sets the prior mean to the fitted profile with product k
// scaled by s[k] (nil: as fitted). It keeps the fitted profile, so the
// levels never compound.
func (b *Built) SetMeanScale(s []float64) {
	if b.meanBase == nil {
		b.meanBase = b.Mean
	}
	b.Mean = b.meanBase.Scaled(s)
	b.meanScale = slices.Clone(s)
}

// MeanScale returns the levels SetMeanScale set (nil: as fitted).
func (b *Built) MeanScale() []float64 { return slices.Clone(b.meanScale) }

// MeanBase returns the fitted prior mean, before any level.
func (b *Built) MeanBase() *Profile {
	if b.meanBase != nil {
		return b.meanBase
	}
	return b.Mean
}
