package synth

import (
	"math"
	"math/rand/v2"
)

// Independent-sinusoid protocol (the paper's Datasets A, B and C).
const (
	indepNoiseSD   = 0.1 // N(0, 0.01)
	indepThreshold = 0.5 // A and C
)

type sinusoid func(x float64) float64

var (
	sinA1 sinusoid = func(x float64) float64 { return math.Cos(0.04*x+0.33*math.Pi) * math.Sin(0.2*x) }
	sinA2 sinusoid = func(x float64) float64 {
		return math.Cos(0.05*(x-50)+0.4*math.Pi) * math.Sin(0.3*(x-50))
	}
	sinC1 sinusoid = func(x float64) float64 { return math.Cos(0.04*x+0.33*math.Pi) * math.Sin(0.4*x) }
	sinC2 sinusoid = func(x float64) float64 {
		return math.Cos(0.06*(x-50)+0.4*math.Pi) * math.Sin(0.3*(x-50))
	}
	sinC3 sinusoid = func(x float64) float64 { return math.Cos(0.03*x+0.45*math.Pi) * math.Sin(0.25*x) }
)

// BOptions selects variants of Dataset B.
type BOptions struct {
	// ReferenceTestSupply uses the first training threshold draw as a
	// constant test threshold, as the reference notebook passed to its test
	// NLPD (an artefact behind DCGP's poor published B test NLPD). By default
	// the test thresholds are fresh U(0,1) draws, like the training ones.
	ReferenceTestSupply bool
}

// DatasetA simulates Dataset A: two sinusoids plus N(0, 0.1²) noise,
// constant supply 0.5, each product receiving the other's full excess, the
// receiver's total capped at its supply. 400 train points (two linspace
// blocks with a gap 60–75), 1000 test points.
func DatasetA(seed uint64) (*Dataset, error) {
	return indepDataset("A", seed, []sinusoid{sinA1, sinA2}, swap2(), constSupply(indepThreshold), constSupply(indepThreshold))
}

// DatasetB is Dataset A with supply drawn U(0,1) independently per time
// point and product (sporadic stock-outs); see BOptions for the test
// thresholds.
func DatasetB(seed uint64) (*Dataset, error) { return DatasetBWith(seed, BOptions{}) }

// DatasetBWith is DatasetB with options.
func DatasetBWith(seed uint64, opt BOptions) (*Dataset, error) {
	var first float64
	seen := false
	train := func(r *rand.Rand) float64 {
		v := r.Float64()
		if !seen {
			first, seen = v, true
		}
		return v
	}
	test := func(r *rand.Rand) float64 { return r.Float64() }
	if opt.ReferenceTestSupply {
		test = func(*rand.Rand) float64 { return first }
	}
	return indepDataset("B", seed, []sinusoid{sinA1, sinA2}, swap2(), train, test)
}

// DatasetC simulates Dataset C: three sinusoids, constant supply 0.5;
// products 1 and 3 send all their excess to product 2, product 2 sends half
// to each of 1 and 3; receivers are capped at their supply.
func DatasetC(seed uint64) (*Dataset, error) {
	t := [][]float64{{0, 1, 0}, {0.5, 0, 0.5}, {0, 1, 0}}
	d, err := indepDataset("C", seed, []sinusoid{sinC1, sinC2, sinC3}, t, constSupply(indepThreshold), constSupply(indepThreshold))
	if err != nil {
		return nil, err
	}
	d.Features = [][]float64{{-1, -1}, {0, 0}, {1, 1}}
	return d, nil
}

func swap2() [][]float64 { return [][]float64{{0, 1}, {1, 0}} }

func constSupply(u float64) func(*rand.Rand) float64 {
	return func(*rand.Rand) float64 { return u }
}

// indepTimes returns the two-block input grid with n points per block.
func indepTimes(n int) []float64 {
	return append(linspace(-17, 60, n), linspace(75, 147, n)...)
}

// indepDataset draws train noise, then train thresholds, then test noise
// (the reference's order, each on its own stream), and censors/transfers
// both splits with the same rule. Test observations are not used by the
// protocol (test targets are f(x*) + fresh noise) but are filled for
// completeness.
func indepDataset(name string, seed uint64, fs []sinusoid, t [][]float64, trainU, testU func(*rand.Rand) float64) (*Dataset, error) {
	np := len(fs)
	d := &Dataset{
		Name:           name,
		Products:       make([]string, np),
		Features:       [][]float64{{-1, -1}, {1, 1}},
		Transfer:       t,
		DiffusionSteps: 1,
	}
	for k := range np {
		d.Products[k] = "product " + string(rune('1'+k))
	}
	d.Train = newSplit(indepTimes(200), np)
	d.Test = newSplit(indepTimes(500), np)
	fillIndep(&d.Train, fs, t, newRNG(seed, streamNoise), newRNG(seed, streamSupply), trainU)
	fillIndep(&d.Test, fs, t, newRNG(seed, streamTestNoise), newRNG(seed, streamTestSupply), testU)
	return d, nil
}

func fillIndep(s *Split, fs []sinusoid, t [][]float64, noise, supply *rand.Rand, u func(*rand.Rand) float64) {
	for i, x := range s.Times {
		for k, f := range fs {
			s.TrueF[i][k] = f(x)
			s.TrueY[i][k] = s.TrueF[i][k] + indepNoiseSD*noise.NormFloat64()
		}
	}
	for i := range s.Times {
		for k := range fs {
			s.Supply[i][k] = u(supply)
			s.Censored[i][k] = s.TrueY[i][k] > s.Supply[i][k]
		}
		censorTransfer(s.TrueY[i], s.Supply[i], t, true, s.Obs[i], s.Saturated[i])
	}
}
