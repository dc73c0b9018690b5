package filter

import (
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/dcgpd/dcgpd/internal/linalg"
)

// onlineSplitMin is the number of scalar chains from which an Online runs
// its per-chain passes (Advance, Update, MarginalVar, ForecastStepsVar,
// SaveTo) on two goroutines: below it the work (about 0.3 µs a chain of
// dimension 10) is too small to pay for the hand-over. Each chain's
// numbers are computed as the serial loop computes them and everything
// summed over the chains is summed after, in chain order, so the results
// are the same bit for bit whichever goroutine computed a chain. A
// variable so that tests can split small models.
var onlineSplitMin = 256

// chainChunks is the number of pieces a split pass is cut into; the two
// goroutines take them in turn. On a machine whose cores are busy with
// other work the second goroutine may start late or be descheduled: the
// caller then takes the pieces the worker has not and waits for one piece
// at most, instead of for half the pass.
const chainChunks = 16

// chainPass names one of the per-chain passes an Online splits.
type chainPass uint8

const (
	passAdvance  chainPass = iota // predict every chain into nm, nP
	passUpdate                    // updateScalar into nm, nP, per-chain results in split.ll…
	passMarginal                  // scalarMarginalSparse of (args.m, args.P)
	passForecast                  // forecastMoments of every chain
	passSave                      // copy m, P into args.state
)

// chainTask is a pass handed to the split goroutine; gen tells it from
// the passes the caller has taken back.
type chainTask struct {
	o    *Online
	pass chainPass
	gen  int64
}

// chainSplit is an Online's second goroutine and the per-chain results of
// an update. The goroutine holds only the channels and counters, so the
// Online can be collected; a cleanup then closes start and the goroutine
// ends.
type chainSplit struct {
	worker bool // the goroutine runs (more than one core when it was made)
	start  chan chainTask
	done   chan struct{}
	sync   *chainSync
	gen    int64 // the last pass handed out
	// Per chain: the bin's log-likelihood term, √λ₂ and √s of the update
	// (0: no site), multiplied into the determinants in chain order.
	ll, sq, s []float64
	// Per goroutine (0: the caller's): the first chain whose update
	// failed (−1: none) and its error, and whether a chain it updated is
	// not finite.
	fail      [2]int
	err       [2]error
	nonFinite [2]bool
}

// chainSync is what both goroutines of a split pass share: the next piece
// to take, and the last pass decided (taken by the worker or taken back
// by the caller: exactly one of them moves it from gen−1 to gen).
type chainSync struct {
	next  atomic.Int64
	claim atomic.Int64
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

// onlineWorker runs the passes it is given and can still claim until
// start is closed.
func onlineWorker(start <-chan chainTask, done chan<- struct{}, sync *chainSync) {
	defer onlineWorkers.Add(-1)
	for t := range start {
		if sync.claim.CompareAndSwap(t.gen-1, t.gen) {
			t.o.runChunks(t.pass, sync, 1)
			done <- struct{}{}
		}
		t = chainTask{}
	}
}

// splits reports whether the per-chain passes run in two halves (decided
// when the filter is made, from onlineSplitMin).
func (o *Online) splits() bool { return o.splitOn }

// chains returns the Online's split state, made on first use.
func (o *Online) chains() *chainSplit {
	if o.split == nil {
		nc := len(o.kerns)
		p := &chainSplit{start: make(chan chainTask, 1), done: make(chan struct{}, 1), sync: &chainSync{}}
		p.ll, p.sq, p.s = make([]float64, nc), make([]float64, nc), make([]float64, nc)
		if p.worker = runtime.GOMAXPROCS(0) > 1; p.worker {
			onlineWorkers.Add(1)
			go onlineWorker(p.start, p.done, p.sync)
			runtime.AddCleanup(o, func(c chan chainTask) { close(c) }, p.start)
		}
		o.split = p
	}
	return o.split
}

// forEachChain runs pass over every chain: for a split Online in pieces
// that the caller and the split goroutine (where there is one) take in
// turn, else in one loop.
func (o *Online) forEachChain(pass chainPass) {
	if !o.splits() {
		o.runPass(pass, 0, len(o.kerns), 0)
		return
	}
	p := o.chains()
	p.sync.next.Store(0)
	if p.worker {
		p.gen++
		// A pass taken back before the worker saw it may still wait in
		// start: drop it (the channel holds one).
		select {
		case <-p.start:
		default:
		}
		p.start <- chainTask{o: o, pass: pass, gen: p.gen}
	}
	o.runChunks(pass, p.sync, 0)
	if p.worker && !p.sync.claim.CompareAndSwap(p.gen-1, p.gen) {
		// The worker took the pass: wait for its last piece.
		<-p.done
	}
}

// runChunks takes pieces of pass until none is left; w (0 or 1) is the
// goroutine, where an update records its failures.
func (o *Online) runChunks(pass chainPass, sync *chainSync, w int) {
	nc := len(o.kerns)
	size := (nc + chainChunks - 1) / chainChunks
	for {
		i := int(sync.next.Add(1)) - 1
		c0 := i * size
		if c0 >= nc {
			return
		}
		o.runPass(pass, c0, min(c0+size, nc), w)
	}
}

// runPass runs pass over chains [c0, c1); w (0 or 1) is the goroutine,
// where an update records its failures.
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
// records for goroutine w the first chain that failed (pieces end at
// their first failure) and whether its updated chains are finite.
func (o *Online) updateChains(c0, c1, w int) {
	a, p := &o.args, o.split
	for c := c0; c < c1; c++ {
		l, sq, s, err := updateScalar(o.nm[c], o.nP[c], o.m[c], o.P[c], o.hj[c], o.hv[c], a.nat1[c], a.nat2[c], o.work[c].ut)
		if err != nil {
			if p.fail[w] < 0 || c < p.fail[w] {
				p.fail[w], p.err[w] = c, err
			}
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
	if w := p.fail[0]; w >= 0 || p.fail[1] >= 0 {
		i := 0
		if w < 0 || (p.fail[1] >= 0 && p.fail[1] < w) {
			i = 1
		}
		return 0, fmt.Errorf("product %d: %w", p.fail[i], p.err[i])
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
