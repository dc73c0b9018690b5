package inventory

import "math"

// chain is the scratch memory of the uniformisation sweeps for one
// capacity; it belongs to one Planner.
type chain struct {
	tol  float64
	w, c []float64 // Poisson weights and their time integrals
	// wLT and wTau are the Λτ and τ that w and c hold (0: none yet): the
	// sweeps of one bin at one node share them.
	wLT, wTau float64
	q, y      []float64 // the sweep's current power and its next
	acc       []float64 // the sweep's running sum
}

// resize makes every vector C+1 long, reusing memory.
func (ch *chain) resize(c int) {
	n := c + 1
	if cap(ch.q) < n {
		ch.q, ch.y, ch.acc = make([]float64, n), make([]float64, n), make([]float64, n)
	}
	ch.q, ch.y, ch.acc = ch.q[:n], ch.y[:n], ch.acc[:n]
}

// substeps returns the number of equal sub-steps of a bin with total
// rate lt = (λ+μ)·1 and their duration.
func substeps(lt float64) (int, float64) {
	m := int(math.Ceil(lt / maxSubstepMean))
	if m < 1 {
		m = 1
	}
	return m, 1 / float64(m)
}

// forward advances the distribution v (in place) over one bin of rates
// λ, μ (events per bin) with 0 and/or C absorbing as asked, and returns
// ∫ over the bin of v_t[0] and of v_t[C].
func (ch *chain) forward(v []float64, lambda, mu float64, abs0, absC bool) (int0, intC float64) {
	c := len(v) - 1
	lt := lambda + mu
	if lt == 0 {
		return v[0], v[c]
	}
	a, b := lambda/lt, mu/lt
	m, tau := substeps(lt)
	for range m {
		ch.weights(lt*tau, tau)
		q, y, acc := ch.q, ch.y, ch.acc
		copy(q, v)
		clear(acc)
		last := len(ch.w) - 1
		for n, wn := range ch.w {
			cn := ch.c[n]
			int0 += cn * q[0]
			intC += cn * q[c]
			if n == last {
				axpy(acc, wn, q)
				break
			}
			stepForward(y, q, acc, wn, a, b, abs0, absC)
			q, y = y, q
		}
		copy(v, acc)
	}
	return int0, intC
}

// backward replaces the cost-to-go v (in place) by the cost-to-go one
// bin earlier: v(s) ← E_s[∫ over the bin of (cp·λ·1{X=0} + cr·μ·1{X=C}) dt + v(X_end)],
// by Horner's rule on Σ_n Pⁿ(c_n r + w_n v).
func (ch *chain) backward(v []float64, lambda, mu, cp, cr float64) {
	c := len(v) - 1
	lt := lambda + mu
	if lt == 0 {
		return // no events: nothing unmet, nothing moves
	}
	r0, rC := cp*lambda, cr*mu
	a, b := lambda/lt, mu/lt
	m, tau := substeps(lt)
	for range m {
		ch.weights(lt*tau, tau)
		y, t := ch.q, ch.y
		last := len(ch.w) - 1
		wn, cn := ch.w[last], ch.c[last]
		for x, vx := range v {
			y[x] = wn * vx
		}
		y[0] += cn * r0
		y[c] += cn * rC
		for n := last - 1; n >= 0; n-- {
			wn, cn = ch.w[n], ch.c[n]
			stepBackward(t, y, v, wn, a, b)
			y, t = t, y
			y[0] += cn * r0
			y[c] += cn * rC
		}
		copy(v, y)
	}
}

// weights sets w and c for Λτ = lt over τ = tau, unless they hold them.
func (ch *chain) weights(lt, tau float64) {
	if lt == ch.wLT && tau == ch.wTau && len(ch.w) > 0 {
		return
	}
	ch.w, ch.c = poissonWeights(lt, tau, ch.tol, ch.w, ch.c)
	ch.wLT, ch.wTau = lt, tau
}
