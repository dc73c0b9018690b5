package filter

import (
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/dcgpd/dcgpd/internal/linalg"
)

// chainChunks is the number of pieces a split pass is cut into; the
// goroutines take them in turn. On a machine whose cores are busy with
// other work a helper goroutine may start late or be descheduled: the
// caller then takes the pieces the helpers have not and waits for one
// piece per helper at most, instead of for a share of the pass.
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

// chainSplit is what a split Online's passes share with their helper
// goroutines, and the per-chain results of an update.
type chainSplit struct {
	done  chan struct{} // a helper's pass is done
	syncs []*chainSync  // per helper
	next  atomic.Int64  // the next piece to take
	gen   int64         // the last pass handed out
	// Per chain: the bin's log-likelihood term, √λ₂ and √s of the update
	// (0: no site), multiplied into the determinants in chain order.
	ll, sq, s []float64
	// Per goroutine (0: the caller's, then the helpers'): the first chain
	// whose update failed (−1: none) and its error, and whether a chain it
	// updated is not finite.
	fail      []int
	err       []error
	nonFinite []bool
}

// chainSync is what the caller and one helper of a split pass share: the
// last pass decided (taken by the helper or taken back by the caller:
// exactly one of them moves it from gen−1 to gen).
type chainSync struct {
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

// passHelper is a pass's helper goroutine w: it takes pass gen's pieces
// if the caller has not taken its share back, and ends. One that starts
// after its share was taken back finds the claim moved on and ends without
// touching the Online: no goroutine outlives its pass's work.
func passHelper(o *Online, pass chainPass, gen int64, w int, sync *chainSync, done chan<- struct{}) {
	if sync.claim.CompareAndSwap(gen-1, gen) {
		o.runChunks(pass, w)
		done <- struct{}{}
	}
}

// splits reports whether the per-chain passes are split (decided when
// the filter is made, from OnlineOptions.SplitMin).
func (o *Online) splits() bool { return o.splitOn }

// workers returns the number of goroutines a split pass runs on.
func (o *Online) workers() int {
	w := o.opts.Workers
	if w == 0 {
		w = runtime.GOMAXPROCS(0)
	}
	return max(1, min(w, chainChunks))
}

// chains returns the Online's split state, made on first use and grown
// to nw goroutines.
func (o *Online) chains(nw int) *chainSplit {
	if o.split == nil {
		nc := len(o.kerns)
		p := &chainSplit{}
		p.ll, p.sq, p.s = make([]float64, nc), make([]float64, nc), make([]float64, nc)
		o.split = p
	}
	p := o.split
	if len(p.fail) < nw {
		p.done = make(chan struct{}, nw)
		p.fail, p.err, p.nonFinite = make([]int, nw), make([]error, nw), make([]bool, nw)
		for w := range p.fail {
			p.fail[w] = -1
		}
		for len(p.syncs) < nw-1 {
			s := &chainSync{}
			s.claim.Store(p.gen)
			p.syncs = append(p.syncs, s)
		}
	}
	return p
}

// forEachChain runs pass over every chain: for a split Online in pieces
// that the caller and up to Workers−1 helper goroutines started for the
// pass take in turn, else in one loop. The caller waits for the last
// piece of every helper that took the pass; a helper that has not started
// by the time the caller ran out of pieces is taken back and ends as soon
// as it starts.
func (o *Online) forEachChain(pass chainPass) {
	nw := o.workers()
	if !o.splits() {
		o.runPass(pass, 0, len(o.kerns), 0)
		return
	}
	p := o.chains(nw)
	p.next.Store(0)
	p.gen++
	for w := 1; w < nw; w++ {
		go passHelper(o, pass, p.gen, w, p.syncs[w-1], p.done)
	}
	o.runChunks(pass, 0)
	for _, s := range p.syncs {
		if !s.claim.CompareAndSwap(p.gen-1, p.gen) {
			// This helper took the pass: wait for its last piece.
			<-p.done
		}
	}
}

// runChunks takes pieces of pass until none is left; w is the goroutine
// (0: the caller's), where an update records its failures.
func (o *Online) runChunks(pass chainPass, w int) {
	nc := len(o.kerns)
	size := (nc + chainChunks - 1) / chainChunks
	next := &o.split.next
	for {
		i := int(next.Add(1)) - 1
		c0 := i * size
		if c0 >= nc {
			return
		}
		o.runPass(pass, c0, min(c0+size, nc), w)
	}
}

// runPass runs pass over chains [c0, c1); w is the goroutine,
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
	if o.splits() {
		return o.chains(o.workers())
	}
	if o.split != nil {
		return o.split
	}
	return o.chains(1)
}

// updateScalarChains is Update's pass for scalar chains: it returns the
// bin's log-likelihood, the per-chain terms and the determinants summed in
// chain order, or the first failing chain's error.
func (o *Online) updateScalarChains(nat1, nat2 []float64) (float64, error) {
	p := o.updateScratch()
	for w := range p.fail {
		p.fail[w], p.err[w], p.nonFinite[w] = -1, nil, false
	}
	o.args = chainArgs{nat1: nat1, nat2: nat2}
	o.forEachChain(passUpdate)
	o.args = chainArgs{}
	first := -1
	for w, c := range p.fail {
		if c >= 0 && (first < 0 || c < p.fail[first]) {
			first = w
		}
	}
	if first >= 0 {
		return 0, fmt.Errorf("product %d: %w", p.fail[first], p.err[first])
	}
	for _, bad := range p.nonFinite {
		if bad {
			return 0, errNonFinite
		}
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
