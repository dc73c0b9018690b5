package synth

import (
	"math"
	"math/rand/v2"
)

// dailySupply simulates one hub's supply under the bike protocol
// (the paper's bike appendix): at the first step and at every midnight the stock
// is redrawn U(lo, hi) (overnight rebalancing); otherwise it follows the
// previous hour's balance, s_t = max(0, s_{t−1} + drop_{t−1} − pick_{t−1}),
// kept in floating point, and each step's supply is that stock truncated to
// an integer. hour0 is the hour of day of step 0. As in the reference, the
// balance uses the true pickups, not the censored ones.
func dailySupply(r *rand.Rand, pick, drop []float64, hour0 int, lo, hi float64) []float64 {
	out := make([]float64, len(pick))
	s := 0.0
	for i := range pick {
		if i == 0 || (hour0+i)%24 == 0 {
			s = uniform(r, lo, hi)
		} else {
			s = math.Max(0, s+drop[i-1]-pick[i-1])
		}
		out[i] = math.Trunc(s)
	}
	return out
}

// randomSplit partitions 0..n-1 like the reference: a random permutation
// whose last int(testFrac·n) entries are the test rows; both sides sorted.
func randomSplit(r *rand.Rand, n int, testFrac float64) (train, test []int) {
	perm := r.Perm(n)
	nTest := int(testFrac * float64(n))
	mark := make([]bool, n)
	for _, i := range perm[n-nTest:] {
		mark[i] = true
	}
	for i := range n {
		if mark[i] {
			test = append(test, i)
		} else {
			train = append(train, i)
		}
	}
	return train, test
}

// tailSplit holds out the last int(testFrac·n) rows (a forecasting split).
func tailSplit(n int, testFrac float64) (train, test []int) {
	nTest := int(testFrac * float64(n))
	for i := range n {
		if i < n-nTest {
			train = append(train, i)
		} else {
			test = append(test, i)
		}
	}
	return train, test
}

// simulateHubSupply fills grid.Supply with dailySupply, hub by hub (the
// reference's draw order).
func simulateHubSupply(grid *Split, pick, drop [][]float64, hour0 int, lo, hi []float64, r *rand.Rand) {
	n := len(pick)
	p := make([]float64, n)
	d := make([]float64, n)
	for k := range lo {
		for i := range n {
			p[i], d[i] = pick[i][k], drop[i][k]
		}
		for i, u := range dailySupply(r, p, d, hour0, lo[k], hi[k]) {
			grid.Supply[i][k] = u
		}
	}
}

// censorGrid censors every row of grid.TrueY at grid.Supply and transfers
// the excess with t, capping receivers at their supply (bike protocol).
func censorGrid(grid *Split, t [][]float64) {
	for i := range grid.TrueY {
		for k, y := range grid.TrueY[i] {
			grid.Censored[i][k] = y > grid.Supply[i][k]
		}
		censorTransfer(grid.TrueY[i], grid.Supply[i], t, true, grid.Obs[i], grid.Saturated[i])
	}
}
