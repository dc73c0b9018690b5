package synth

import (
	"math"
	"math/rand/v2"
)

// Stream identifiers: each generation stage draws from its own PCG stream
// so that e.g. changing the supply process leaves the demand untouched.
const (
	streamNoise uint64 = iota + 1
	streamTestNoise
	streamSupply
	streamTestSupply
	streamLocations
	streamGP
	streamSplit
	streamDemand
	streamDropoffs
	streamProfile
)

// newRNG returns the PCG generator for one stage of a seeded simulation.
func newRNG(seed, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15^stream))
}

// uniform draws U(lo, hi).
func uniform(r *rand.Rand, lo, hi float64) float64 {
	return lo + (hi-lo)*r.Float64()
}

// poisson draws from Poisson(lam): multiplication method for small means,
// Hörmann's PTRS transformed rejection (as in numpy) otherwise.
func poisson(r *rand.Rand, lam float64) float64 {
	switch {
	case !(lam > 0):
		return 0
	case lam < 10:
		l := math.Exp(-lam)
		k, p := 0.0, r.Float64()
		for p > l {
			k++
			p *= r.Float64()
		}
		return k
	}
	slam, loglam := math.Sqrt(lam), math.Log(lam)
	b := 0.931 + 2.53*slam
	a := -0.059 + 0.02483*b
	invalpha := 1.1239 + 1.1328/(b-3.4)
	vr := 0.9277 - 3.6224/(b-2)
	for {
		u := r.Float64() - 0.5
		v := r.Float64()
		us := 0.5 - math.Abs(u)
		k := math.Floor((2*a/us+b)*u + lam + 0.43)
		if us >= 0.07 && v <= vr {
			return k
		}
		if k < 0 || (us < 0.013 && v > us) {
			continue
		}
		lg, _ := math.Lgamma(k + 1)
		if math.Log(v)+math.Log(invalpha)-math.Log(a/(us*us)+b) <= -lam+k*loglam-lg {
			return k
		}
	}
}
