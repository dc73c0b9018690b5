package diffusion

import "fmt"

// ParamGrad writes ∂g/∂ℓ and ∂g/∂π at fixed f and u into dgdEll and
// dgdPi (either may be nil; otherwise length N_p), exact on the linear
// piece containing f (kinks: see the package doc). It needs a kernel
// transition (Graph.Transition, or a mask of one). A caller chains a
// likelihood gradient v = ∂L/∂g as ∂L/∂ℓ = v·∂g/∂ℓ, and through the raw
// parameters with LengthscaleFromRaw and SinkFromRaw.
//
// Forward-mode tangents: with ḟ⁽⁰⁾ = 0 and ė⁽ˢ⁾ = a⁽ˢ⁾ ⊙ ḟ⁽ˢ⁻¹⁾,
//
//	ḟ⁽ˢ⁾ = ḟ⁽ˢ⁻¹⁾ + ė⁽ˢ⁾ (T − I) + e⁽ˢ⁾ Ṫ,   ġ = b ⊙ ḟ⁽ᴺ⁾,
//
// in O(N_p + Σ_s nnz of the excess rows) without allocation.
func (op Operator) ParamGrad(dgdEll, dgdPi, f, u []float64, ws *Workspace) error {
	ws, err := op.checkInputs(f, u, ws)
	if err != nil {
		return err
	}
	return op.paramGrad(dgdEll, dgdPi, f, u, ws)
}

// paramGrad is ParamGrad on validated inputs and a sized workspace.
func (op Operator) paramGrad(dgdEll, dgdPi, f, u []float64, ws *Workspace) error {
	t, n := op.T, op.T.n
	if !t.kernel {
		return fmt.Errorf("diffusion: explicit transition has no lengthscale or sink parameter")
	}
	if err := checkDst(n, "dg/dℓ, dg/dπ", dgdEll, dgdPi); err != nil {
		return err
	}
	op.forward(f, u, ws)
	tl, tp, el, ep := ws.aux2, ws.aux3, ws.aux, ws.aux4
	clear(tl)
	clear(tp)
	rowPtr, col, val, dist2 := t.rowPtr, t.col, t.val, t.dist2
	c3, cp := t.invEll3, t.invOneMinusPi
	for s := range op.Steps {
		exc := ws.exc[s*n : (s+1)*n]
		// Products in excess sit at u after the step: their own tangent
		// resets to 0 and is passed on as ė.
		for i, e := range exc {
			if e != 0 {
				el[i], ep[i] = tl[i], tp[i]
				tl[i], tp[i] = 0, 0
			}
		}
		for i, e := range exc {
			if e == 0 {
				continue
			}
			a, b := rowPtr[i], rowPtr[i+1]
			cols, vals, d2 := col[a:b], val[a:b], dist2[a:b]
			vals, d2 = vals[:len(cols)], d2[:len(cols)]
			m, eli, epi := t.mean2[i], el[i], ep[i]
			for k, j := range cols {
				v := vals[k]
				if v == 0 {
					continue
				}
				// ∂T/∂ℓ and ∂T/∂π of the entry, as in entryDerivs.
				var dl float64
				if x := d2[k] - m; x != 0 {
					dl = v * x * c3
				}
				tl[j] += v*eli + e*dl
				tp[j] += v*epi - e*v*cp
			}
		}
	}
	for j, fn := range ws.cur {
		gain := fn > f[j]
		if dgdEll != nil {
			dgdEll[j] = 0
			if gain {
				dgdEll[j] = tl[j]
			}
		}
		if dgdPi != nil {
			dgdPi[j] = 0
			if gain {
				dgdPi[j] = tp[j]
			}
		}
	}
	return nil
}
