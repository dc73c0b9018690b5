package diffusion

import (
	"fmt"
	"math"
)

// MaxSteps bounds N_diff: the workspace keeps every step's excess (N_p
// values per step) for the derivatives, and after a few steps nearly all
// excess has been absorbed or lost anyway.
const MaxSteps = 1000

// Operator is the diffusion map f ↦ g of the package doc: Steps
// applications of f ← f + max(f − u, 0)(T − I), then g = f + max(f⁽ᴺ⁾ − f, 0).
// It is a plain value; the methods validate it. Use Steps = 1 with a masked
// T for the supply-aware mode (Transition.SupplyAware).
type Operator struct {
	// T is the transition matrix.
	T *Transition
	// Steps is N_diff, 1 <= Steps <= MaxSteps.
	Steps int
}

// NewOperator returns the operator for t and steps = N_diff in
// [1, MaxSteps].
func NewOperator(t *Transition, steps int) (Operator, error) {
	op := Operator{T: t, Steps: steps}
	if err := op.check(); err != nil {
		return Operator{}, err
	}
	return op, nil
}

func (op Operator) check() error {
	if op.T == nil || op.T.n == 0 {
		return fmt.Errorf("diffusion: operator has no transition matrix")
	}
	if op.Steps < 1 || op.Steps > MaxSteps {
		return fmt.Errorf("diffusion: number of diffusion steps %d must be in [1, %d]", op.Steps, MaxSteps)
	}
	return nil
}

// checkInputs validates the operator, f (finite) and u (not NaN, not −Inf;
// +Inf is unlimited supply) and prepares ws (a fresh one when nil).
func (op Operator) checkInputs(f, u []float64, ws *Workspace) (*Workspace, error) {
	if err := op.check(); err != nil {
		return nil, err
	}
	n := op.T.n
	if len(f) != n || len(u) != n {
		return nil, fmt.Errorf("diffusion: f has length %d and u %d, want %d products", len(f), len(u), n)
	}
	negInf := math.Inf(-1)
	for i := range n {
		if f[i]-f[i] != 0 { // NaN or ±Inf, in one comparison
			return nil, fmt.Errorf("diffusion: latent demand f[%d] = %v is not finite", i, f[i])
		}
		if !(u[i] > negInf) {
			return nil, fmt.Errorf("diffusion: supply u[%d] = %v (use +Inf for unlimited)", i, u[i])
		}
	}
	if ws == nil {
		ws = new(Workspace)
	}
	ws.ensure(n, op.Steps)
	return ws, nil
}

// checkDst returns an error unless every non-nil destination has length n.
func checkDst(n int, names string, dsts ...[]float64) error {
	for _, d := range dsts {
		if d != nil && len(d) != n {
			return fmt.Errorf("diffusion: destination (%s) has length %d, want %d", names, len(d), n)
		}
	}
	return nil
}

// forward runs the diffusion steps, recording e⁽ˢ⁾ in ws.exc and leaving
// f⁽ᴺ⁾ in ws.cur. A product counts as in excess only when f_i > u_i
// strictly (the "not excess" side of the kink).
func (op Operator) forward(f, u []float64, ws *Workspace) {
	n := op.T.n
	rowPtr, col, val := op.T.rowPtr, op.T.col, op.T.val // hoisted: stores into next would force reloads
	cur, next := ws.cur, ws.aux
	copy(cur, f)
	for s := range op.Steps {
		exc := ws.exc[s*n : (s+1)*n]
		copy(next, cur)
		for i, fi := range cur {
			e := fi - u[i]
			if e > 0 {
				exc[i] = e
				next[i] = u[i] // = f_i − e_i, without the rounding of the subtraction
			} else {
				exc[i] = 0
			}
		}
		for i, e := range exc {
			if e == 0 {
				continue
			}
			a, b := rowPtr[i], rowPtr[i+1]
			cols, vals := col[a:b], val[a:b]
			vals = vals[:len(cols)]
			for k, j := range cols {
				next[j] += e * vals[k]
			}
		}
		cur, next = next, cur
	}
	if op.Steps%2 == 1 {
		copy(ws.cur, ws.aux) // the final state ended in aux
	}
}

// Apply computes the diffused mean g = f + d and the net gain
// d = max(f⁽ᴺ⁾ − f, 0) for latent demand f and supply u (+Inf =
// unlimited). Either destination may be nil; g and d may alias f. With a
// Workspace of the right size it allocates nothing; ws may be nil.
func (op Operator) Apply(g, d, f, u []float64, ws *Workspace) error {
	ws, err := op.checkInputs(f, u, ws)
	if err != nil {
		return err
	}
	if err := checkDst(op.T.n, "g, d", g, d); err != nil {
		return err
	}
	op.forward(f, u, ws)
	for i, fn := range ws.cur {
		fi := f[i]
		var di float64
		if x := fn - fi; x > 0 {
			di = x
		}
		if d != nil {
			d[i] = di
		}
		if g != nil {
			g[i] = fi + di
		}
	}
	return nil
}

// Lost writes into dst (length N_p, or nil) the demand each product loses
// to the sink over all steps, Σ_s e⁽ˢ⁾_i Sink(i), and returns the total.
// The steps conserve the rest: Σ_j f⁽ᴺ⁾_j + lost = Σ_j f_j.
func (op Operator) Lost(dst, f, u []float64, ws *Workspace) (float64, error) {
	ws, err := op.checkInputs(f, u, ws)
	if err != nil {
		return 0, err
	}
	if err := checkDst(op.T.n, "lost", dst); err != nil {
		return 0, err
	}
	op.forward(f, u, ws)
	n := op.T.n
	var total float64
	for i := range n {
		var l float64
		for s := range op.Steps {
			l += ws.exc[s*n+i]
		}
		l *= op.T.sink[i]
		if dst != nil {
			dst[i] = l
		}
		total += l
	}
	return total, nil
}
