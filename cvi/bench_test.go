package cvi

import (
	"math"
	"testing"
)

var benchSink float64

// BenchmarkExpect times one expected log-likelihood with its two
// derivatives per family and path: closed forms, Gauss–Hermite (q narrow
// against the censoring transition) and the graded rule (q wide).
func BenchmarkExpect(b *testing.B) {
	gauss, _ := NewGaussian(0.3)
	tobit, _ := NewTobit(0.01)
	pexp, _ := NewPoisson(ExpLink)
	psp, _ := NewPoisson(SoftplusLink)
	cpexp, _ := NewCensoredPoisson(ExpLink)
	cpsp, _ := NewCensoredPoisson(SoftplusLink)
	cens := Obs{Y: 0.5, Supply: 0.5, Censored: true}
	for _, c := range []struct {
		name string
		lik  Scalar
		o    Obs
		m, v float64
	}{
		{"Gaussian", gauss, Obs{Y: 0.7, Supply: inf}, 0.5, 0.2},
		{"Tobit/uncensored", tobit, Obs{Y: 0.4, Supply: 0.5}, 0.45, 0.04},
		{"Tobit/censored/GH", tobit, cens, 0.45, 1e-3},
		{"Tobit/censored/graded", tobit, cens, 0.45, 0.04},
		{"Tobit/censored/graded-wide", tobit, cens, 0.45, 1},
		{"Poisson/exp", pexp, Obs{Y: 4}, 1, 0.5},
		{"Poisson/softplus/GH", psp, Obs{Y: 4}, 3, 0.1},
		{"Poisson/softplus/graded", psp, Obs{Y: 4}, 1, 1},
		{"CensoredPoisson/exp/GH", cpexp, Obs{Y: 5, Supply: 5, Censored: true}, math.Log(5), 0.02},
		{"CensoredPoisson/exp/graded", cpexp, Obs{Y: 5, Supply: 5, Censored: true}, math.Log(5), 1},
		{"CensoredPoisson/softplus/graded", cpsp, Obs{Y: 4, Supply: 4, Censored: true}, 3, 4},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				e, dm, d2m := c.lik.Expect(c.o, c.m, c.v)
				benchSink += e + dm + d2m
			}
		})
	}
}

// BenchmarkLogSurvival times the normal tail in each of its regimes.
func BenchmarkLogSurvival(b *testing.B) {
	for _, c := range []struct {
		name string
		z    float64
	}{{"lower", -8}, {"erfc", 1.5}, {"fraction", 9}, {"far", 1e5}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				benchSink += LogSurvival(c.z)
			}
		})
	}
}
