package filter

import (
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/dcgpd/dcgpd/internal/linalg"
)

// chainChunks is the number of pieces a split pass is cut into; the two
// goroutines take them in turn. On a machine whose cores are busy with
// other work the second goroutine may start late or be descheduled: the
// caller then takes the pieces the second has not and waits for one piece
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

// chainSplit is what a split Online's passes share with their second
// goroutines, and the per-chain results of an update.
type chainSplit struct {
	done chan struct{} // a second goroutine's pass is done
	sync *chainSync
	gen  int64 // the last pass handed out
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
// to take, and the last pass decided (taken by the second goroutine or taken back
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

// passHelper is a pass's second goroutine: it takes pass gen's pieces if
// the caller has not taken the pass back, and ends. One that starts after
// its pass was taken back finds the claim moved on and ends without
// touching the Online: no goroutine outlives its pass's work.
func passHelper(o *Online, pass chainPass, gen int64, sync *chainSync, done chan<- struct{}) {
	if sync.claim.CompareAndSwap(gen-1, gen) {
		o.runChunks(pass, sync, 1)
		done <- struct{}{}
	}
}

// splits reports whether the per-chain passes run in two halves (decided
// when the filter is made, from OnlineOptions.SplitMin).
func (o *Online) splits() bool { return o.splitOn }

// chains returns the Online's split state, made on first use.
func (o *Online) chains() *chainSplit {
	if o.split == nil {
		nc := len(o.kerns)
		p := &chainSplit{done: make(chan struct{}, 1), sync: &chainSync{}}
		p.ll, p.sq, p.s = make([]float64, nc), make([]float64, nc), make([]float64, nc)
		o.split = p
	}
	return o.split
}

// forEachChain runs pass over every chain: for a split Online in pieces
// that the caller and a second goroutine started for the pass (with more
// than one core) take in turn, else in one loop. When the second
// goroutine has taken the pass, forEachChain waits for its last piece;
// when it has not started by the time the caller ran out of pieces, the
// caller takes the pass back and the goroutine ends as soon as it starts.
func (o *Online) forEachChain(pass chainPass) {
	if !o.splits() {
		o.runPass(pass, 0, len(o.kerns), 0)
		return
	}
	p := o.chains()
	p.sync.next.Store(0)
	helper := runtime.GOMAXPROCS(0) > 1
	if helper {
		p.gen++
		go passHelper(o, pass, p.gen, p.sync, p.done)
	}
	o.runChunks(pass, p.sync, 0)
	if helper && !p.sync.claim.CompareAndSwap(p.gen-1, p.gen) {
		// The helper took the pass: wait for its last piece.
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
