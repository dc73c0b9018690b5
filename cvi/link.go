package cvi

import (
	"fmt"
	"math"
)

// Link maps the latent f to a Poisson rate μ > 0.
type Link int

const (
	// ExpLink is μ = eᶠ (f is the log-rate).
	ExpLink Link = iota
	// SoftplusLink is μ = log(1 + eᶠ), close to f for large f.
	SoftplusLink
)

// String returns "exp" or "softplus".
func (k Link) String() string {
	switch k {
	case ExpLink:
		return "exp"
	case SoftplusLink:
		return "softplus"
	}
	return fmt.Sprintf("Link(%d)", int(k))
}

func (k Link) valid() error {
	if k != ExpLink && k != SoftplusLink {
		return fmt.Errorf("cvi: unknown Poisson link %d", int(k))
	}
	return nil
}

// eval returns μ(f), g = log μ and the derivatives g′, g″ of g in f. The
// likelihoods are written in g, so that the chain rule through the link is
// exact and stable: for the softplus link g″ → 0 as f → −∞ without
// cancellation.
func (k Link) eval(f float64) (mu, g, g1, g2 float64) {
	if k == ExpLink {
		return math.Exp(f), f, 1, 0
	}
	if f > 0 {
		e := math.Exp(-f)
		mu = f + math.Log1p(e)
		g1 = 1 / ((1 + e) * mu) // sigmoid(f)/μ
		// (1 − s) − g′ = (e·μ − 1)/((1 + e)μ), no cancellation for f > 0.
		return mu, math.Log(mu), g1, g1 * (e*mu - 1) / ((1 + e) * mu)
	}
	u := math.Exp(f)
	if u < 1e-8 { // μ = u − u²/2 + …, to full precision
		mu = u * (1 - 0.5*u)
		g1 = 1 - 0.5*u // s/μ = (1 − u + …)(1 + u/2 + …)
		return mu, f - 0.5*u, g1, -0.5 * u
	}
	mu = math.Log1p(u)
	g1 = u / ((1 + u) * mu)
	// (1 − s) − g′ = (log1p(u) − u)/((1 + u)μ), with log1p(u) − u summed
	// as a series for small u to avoid cancellation.
	return mu, math.Log(mu), g1, g1 * log1pmx(u) / ((1 + u) * mu)
}

// log1pmx returns log(1 + u) − u for 0 ≤ u ≤ 1 without cancellation.
func log1pmx(u float64) float64 {
	if u > 0.25 {
		return math.Log1p(u) - u
	}
	// −u²/2 + u³/3 − …: 0.25ᵏ/k < 1e-17 for k ≥ 26.
	var s float64
	p := -u * u
	for k := 2; k < 28; k++ {
		s += p / float64(k)
		p *= -u
	}
	return s
}

// chain turns derivatives in g = log μ into derivatives in f.
func chain(dg, d2g, g1, g2 float64) (dl, d2l float64) {
	return dg * g1, d2g*g1*g1 + dg*g2
}

// softplusBend is where the softplus link bends (f ≈ 0): log μ turns from
// ≈ f into ≈ log f; log softplus is analytic within π of the real axis.
var softplusBend = feature{0, 1.5}

// bends returns the link's own features (none for the exp link, whose
// Poisson log-likelihood is entire in f).
func (k Link) bends() feature {
	if k == SoftplusLink {
		return softplusBend
	}
	return feature{0, 0} // h = 0: never triggers the graded rule
}
