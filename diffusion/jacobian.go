package diffusion

import "fmt"

// Derivatives of g = f + max(f⁽ᴺ⁾ − f, 0) (column convention). Per step s
// the excess indicator is a⁽ˢ⁾_i = [f⁽ˢ⁻¹⁾_i > u_i] and the step Jacobian
// M_s = I + (Tᵀ − I) diag(a⁽ˢ⁾); F = M_N ⋯ M_1 = ∂f⁽ᴺ⁾/∂f. With the gain
// indicator b_j = [f⁽ᴺ⁾_j > f_j],
//
//	J = ∂g/∂f = I + diag(b) (F − I).

// Jacobian writes J = ∂g/∂f into dst (row-major N_p×N_p, J[j*N_p+k] =
// ∂g_j/∂f_k), exact on the linear piece containing f (kinks: see the
// package doc). Cost O(N_p² + Σ_s |excess_s|·deg·N_p); with more than one
// step it keeps an N_p² buffer in ws.
func (op Operator) Jacobian(dst, f, u []float64, ws *Workspace) error {
	ws, err := op.checkInputs(f, u, ws)
	if err != nil {
		return err
	}
	n := op.T.n
	if len(dst) != n*n {
		return fmt.Errorf("diffusion: Jacobian destination has length %d, want %d", len(dst), n*n)
	}
	op.forward(f, u, ws)
	op.jacobianFromForward(dst, f, ws)
	return nil
}

// jacobianFromForward writes J from the excesses the last forward pass
// left in ws.
func (op Operator) jacobianFromForward(dst, f []float64, ws *Workspace) {
	t, n := op.T, op.T.n
	// Rows of X are the gradients of f⁽ˢ⁾_j; start from the identity.
	clear(dst)
	for i := range n {
		dst[i*n+i] = 1
	}
	for s := range op.Steps {
		exc := ws.exc[s*n : (s+1)*n]
		if s == 0 {
			// Rows of X are still unit vectors: only column i changes.
			for i, e := range exc {
				if e == 0 {
					continue
				}
				dst[i*n+i]--
				for k := t.rowPtr[i]; k < t.rowPtr[i+1]; k++ {
					dst[t.col[k]*n+i] += t.val[k]
				}
			}
			continue
		}
		// X[j,:] += Σ_i a_i T_ij X[i,:] − a_j X[j,:], from the old rows.
		act := ws.act[:0]
		for i, e := range exc {
			if e != 0 {
				act = append(act, i)
			}
		}
		ws.rows = resize(ws.rows, n*n) // once: later calls never grow it
		rows := ws.rows[:len(act)*n]
		for r, i := range act {
			copy(rows[r*n:(r+1)*n], dst[i*n:(i+1)*n])
		}
		for r, i := range act {
			old := rows[r*n : (r+1)*n]
			axpy(dst[i*n:(i+1)*n], -1, old)
			for k := t.rowPtr[i]; k < t.rowPtr[i+1]; k++ {
				if v := t.val[k]; v != 0 {
					j := t.col[k]
					axpy(dst[j*n:(j+1)*n], v, old)
				}
			}
		}
	}
	// Rows without a net gain follow f itself.
	for j, fn := range ws.cur {
		if !(fn > f[j]) {
			row := dst[j*n : (j+1)*n]
			clear(row)
			row[j] = 1
		}
	}
}

// Linearise computes, from one forward pass, the diffused mean g and —
// unless no product was in excess at any step, when g = f and J = I and it
// returns false without touching jac — the dense Jacobian J = ∂g/∂f into
// jac (row-major N_p×N_p). It is Apply followed by Jacobian at half the
// cost, for callers that need both at many points (the joint expectation).
func (op Operator) Linearise(g, jac, f, u []float64, ws *Workspace) (bool, error) {
	ws, err := op.checkInputs(f, u, ws)
	if err != nil {
		return false, err
	}
	n := op.T.n
	if len(g) != n || len(jac) != n*n {
		return false, fmt.Errorf("diffusion: Linearise needs g of length %d and jac of %d, got %d and %d", n, n*n, len(g), len(jac))
	}
	return op.linearise(g, jac, f, u, ws), nil
}

// linearise is Linearise on validated inputs and a sized workspace.
func (op Operator) linearise(g, jac, f, u []float64, ws *Workspace) bool {
	n := op.T.n
	op.forward(f, u, ws)
	active := false
	for _, e := range ws.exc[:n] {
		if e != 0 {
			active = true
			break
		}
	}
	if !active {
		// No excess in the first step means none later: f⁽ᴺ⁾ = f.
		copy(g, f)
		return false
	}
	for i, fn := range ws.cur {
		fi := f[i]
		if x := fn - fi; x > 0 {
			g[i] = fi + x
		} else {
			g[i] = fi
		}
	}
	op.jacobianFromForward(jac, f, ws)
	return true
}

func axpy(y []float64, a float64, x []float64) {
	for k, v := range x {
		y[k] += a * v
	}
}

// JacobianTVec writes Jᵀv (the vector-Jacobian product, e.g. the gradient
// of a likelihood in f from its gradient v in g) into dst without forming
// J: O(N_p + Σ_s nnz of the excess rows) and no allocation with a sized
// workspace. dst may alias v.
func (op Operator) JacobianTVec(dst, v, f, u []float64, ws *Workspace) error {
	ws, err := op.checkInputs(f, u, ws)
	if err != nil {
		return err
	}
	t, n := op.T, op.T.n
	if len(dst) != n || len(v) != n {
		return fmt.Errorf("diffusion: Jᵀv needs dst and v of length %d, got %d and %d", n, len(dst), len(v))
	}
	op.forward(f, u, ws)
	// Jᵀv = v − b⊙v + Fᵀ(b⊙v), Fᵀ = M_1ᵀ ⋯ M_Nᵀ, (M_sᵀ z)_i = Σ_j T_ij z_j
	// for products in excess at step s and z_i otherwise.
	w, z, tmp := ws.aux2, ws.aux3, ws.aux
	for j, fn := range ws.cur {
		if fn > f[j] {
			w[j] = v[j]
		} else {
			w[j] = 0
		}
	}
	copy(z, w)
	for s := op.Steps - 1; s >= 0; s-- {
		exc := ws.exc[s*n : (s+1)*n]
		for i, e := range exc {
			if e == 0 {
				continue
			}
			cols, vals := t.Row(i)
			vals = vals[:len(cols)]
			var acc float64
			for k, j := range cols {
				acc += vals[k] * z[j]
			}
			tmp[i] = acc
		}
		for i, e := range exc {
			if e != 0 {
				z[i] = tmp[i]
			}
		}
	}
	for i := range n {
		dst[i] = v[i] - w[i] + z[i]
	}
	return nil
}
