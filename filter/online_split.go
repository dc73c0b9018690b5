package filter

import (
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/dcgpd/dcgpd/internal/linalg"
)

// onlineSplitMin is the number of scalar chains from which an Online runs
// its per-chain passes (Advance, Update, MarginalVar, ForecastStepsVar,
// SaveTo) in two halves, the second on another goroutine: below it a
// half's work (about 0.3 µs a chain of dimension 10) is too small to pay
// for the hand-over. Each chain's numbers are computed as the serial loop
// computes them and everything summed over the chains is summed after, in
// chain order, so the results are the same bit for bit whether or not the
// second half runs in parallel. A variable so that tests can split small
// models.
var onlineSplitMin = 256

// chainPass names one of the per-chain passes an Online splits.
type chainPass uint8

const (
	passAdvance  chainPass = iota // predict every chain into nm, nP
	passUpdate                    // updateScalar into nm, nP, per-chain results in split.ll…
	passMarginal                  // scalarMarginalSparse of (args.m, args.P)
	passForecast                  // forecastMoments of every chain
	passSave                      // copy m, P into args.state
)

// chainTask is one half of a pass handed to the split goroutine.
type chainTask struct {
	o      *Online
	pass   chainPass
	c0, c1 int
}

// chainSplit is an Online's second goroutine and the per-chain results of
// an update. The goroutine holds only the channels, so the Online can be
// collected; a cleanup then closes start and the goroutine ends.
type chainSplit struct {
	worker bool // the goroutine runs (more than one core when it was made)
	start  chan chainTask
	done   chan struct{}
	// Per chain: the bin's log-likelihood term, √λ₂ and √s of the update
	// (0: no site), multiplied into the determinants in chain order.
	ll, sq, s []float64
	// Per half: the first chain whose update failed (−1: none) and its
	// error, and whether a chain of it is not finite after the update.
	fail      [2]int
	err       [2]error
	nonFinite [2]bool
	// The pass's arguments (views, dropped after the pass).
	args chainArgs
}

// chainArgs are a pass's arguments beyond the Online's own state.
type chainArgs struct {
	nat1, nat2 []float64
	m, P       [][]float64
	mean, vars []float64
	n          int
	state      *State
}

// onlineWorkers counts the split goroutines running (for tests).
var onlineWorkers atomic.Int64

// onlineWorker runs the halves it is given until start is closed.
func onlineWorker(start <-chan chainTask, done chan<- struct{}) {
	defer onlineWorkers.Add(-1)
	for t := range start {
		t.o.runPass(t.pass, t.c0, t.c1, 1)
		t = chainTask{}
		done <- struct{}{}
	}
}

// splits reports whether the per-chain passes run in two halves (decided
// when the filter is made, from onlineSplitMin).
func (o *Online) splits() bool { return o.splitOn }

// chains returns the Online's split state, made on first use.
func (o *Online) chains() *chainSplit {
	if o.split == nil {
		nc := len(o.kerns)
		p := &chainSplit{start: make(chan chainTask), done: make(chan struct{})}
		p.ll, p.sq, p.s = make([]float64, nc), make([]float64, nc), make([]float64, nc)
		if p.worker = runtime.GOMAXPROCS(0) > 1; p.worker {
			onlineWorkers.Add(1)
			go onlineWorker(p.start, p.done)
			runtime.AddCleanup(o, func(c chan chainTask) { close(c) }, p.start)
		}
		o.split = p
	}
	return o.split
}

// forEachChain runs pass over every chain: in two halves when the Online
// splits (the second on the split goroutine where there is one), else in
// one loop.
func (o *Online) forEachChain(pass chainPass) {
	nc := len(o.kerns)
	if !o.splits() {
		o.runPass(pass, 0, nc, 0)
		return
	}
	p := o.chains()
	half := nc / 2
	if p.worker {
		p.start <- chainTask{o: o, pass: pass, c0: half, c1: nc}
	}
	o.runPass(pass, 0, half, 0)
	if p.worker {
		<-p.done
	} else {
		o.runPass(pass, half, nc, 1)
	}
}

// runPass runs pass over chains [c0, c1); w (0 or 1) is the half, where
// an update records its failures.
func (o *Online) runPass(pass chainPass, c0, c1, w int) {
	a := &o.args
	switch pass {
	case passAdvance:
		for c := c0; c < c1; c++ {
			wk := &o.work[c]
			predictDense(o.nm[c], o.nP[c], o.m[c], o.P[c], &wk.tb, wk)
		}
	case passUpdate:
		o.updateChains(c0, c1, w)
	case passMarginal:
		for c := c0; c < c1; c++ {
			a.mean[c], a.vars[c] = scalarMarginalSparse(a.m[c], a.P[c], o.hj[c], o.hv[c])
		}
	case passForecast:
		f := &o.fc
		np := o.model.np
		for c := c0; c < c1; c++ {
			g := f.group[c]
			forecastMoments(f.all[g], o.m[c], o.P[c], a.n, np, f.mean[c:], f.vars[c:], f.noises[g])
		}
	case passSave:
		s := a.state
		for c := c0; c < c1; c++ {
			s.Mean[c] = append(s.Mean[c][:0], o.m[c]...)
			s.Cov[c] = append(s.Cov[c][:0], o.P[c]...)
		}
	}
}

// updateChains updates the scalar chains [c0, c1) with the pass's site,
// keeping each chain's results for Update to sum in chain order, and
// records the half's first failure and whether its updated chains are
// finite.
func (o *Online) updateChains(c0, c1, w int) {
	a, p := &o.args, o.split
	for c := c0; c < c1; c++ {
		l, sq, s, err := updateScalar(o.nm[c], o.nP[c], o.m[c], o.P[c], o.hj[c], o.hv[c], a.nat1[c], a.nat2[c], o.work[c].ut)
		if err != nil {
			p.fail[w], p.err[w] = c, err
			return
		}
		p.ll[c], p.sq[c], p.s[c] = l, sq, s
	}
	for c := c0; c < c1; c++ {
		if !linalg.Finite(o.nm[c]) || !linalg.Finite(o.nP[c]) {
			p.nonFinite[w] = true
			return
		}
	}
}

// updateScratch returns where updates keep their per-chain results: the
// split state, made on first use (its goroutine only for a split Online).
func (o *Online) updateScratch() *chainSplit {
	if o.split != nil {
		return o.split
	}
	if o.splits() {
		return o.chains()
	}
	nc := len(o.kerns)
	o.split = &chainSplit{ll: make([]float64, nc), sq: make([]float64, nc), s: make([]float64, nc)}
	return o.split
}

// updateScalarChains is Update's pass for scalar chains: it returns the
// bin's log-likelihood, the per-chain terms and the determinants summed in
// chain order, or the first failing chain's error.
func (o *Online) updateScalarChains(nat1, nat2 []float64) (float64, error) {
	p := o.updateScratch()
	p.fail, p.err, p.nonFinite = [2]int{-1, -1}, [2]error{}, [2]bool{}
	o.args = chainArgs{nat1: nat1, nat2: nat2}
	o.forEachChain(passUpdate)
	o.args = chainArgs{}
	for w := range p.fail {
		if p.fail[w] >= 0 {
			return 0, fmt.Errorf("product %d: %w", p.fail[w], p.err[w])
		}
	}
	if p.nonFinite[0] || p.nonFinite[1] {
		return 0, errNonFinite
	}
	var total float64
	var siteDet, innovDet logProd
	for c, l := range p.ll[:len(o.kerns)] {
		if sq := p.sq[c]; sq != 0 {
			siteDet.mul(sq)
			innovDet.mul(p.s[c])
		}
		total += l
	}
	return total + siteDet.log() - innovDet.log(), nil
}
