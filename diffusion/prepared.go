package diffusion

import (
	"fmt"
	"math"
)

// Prepared is an Operator bound to one bin's supply and a workspace,
// validated once, for callers that evaluate the map at many points of the
// same bin (the joint expectation's quadrature points): its methods skip
// the per-call validation and workspace sizing of the Operator methods.
// The latent demand passed to them must be finite (a non-finite f gives
// non-finite results, never a panic).
type Prepared struct {
	op Operator
	u  []float64
	ws *Workspace
}

// Prepare validates op and u (not NaN, not −Inf; +Inf is unlimited supply)
// and binds them to ws (a fresh one when nil). u is not copied: it must not
// change while the Prepared is in use.
func (op Operator) Prepare(u []float64, ws *Workspace) (Prepared, error) {
	if err := op.check(); err != nil {
		return Prepared{}, err
	}
	n := op.T.n
	if len(u) != n {
		return Prepared{}, fmt.Errorf("diffusion: u has length %d, want %d products", len(u), n)
	}
	negInf := math.Inf(-1)
	for i, v := range u {
		if !(v > negInf) {
			return Prepared{}, fmt.Errorf("diffusion: supply u[%d] = %v (use +Inf for unlimited)", i, v)
		}
	}
	if ws == nil {
		ws = new(Workspace)
	}
	ws.ensure(n, op.Steps)
	return Prepared{op: op, u: u, ws: ws}, nil
}

// Linearise is Operator.Linearise at the bound supply: it writes g and,
// when some product is in excess (the returned bool), J = ∂g/∂f into jac.
// g must have length N_p and jac N_p².
func (p Prepared) Linearise(g, jac, f []float64) (bool, error) {
	n := p.op.T.n
	if len(f) != n || len(g) != n || len(jac) != n*n {
		return false, fmt.Errorf("diffusion: Linearise needs f and g of length %d and jac of %d, got %d, %d and %d", n, n*n, len(f), len(g), len(jac))
	}
	return p.op.linearise(g, jac, f, p.u, p.ws), nil
}

// ParamGrad is Operator.ParamGrad at the bound supply.
func (p Prepared) ParamGrad(dgdEll, dgdPi, f []float64) error {
	n := p.op.T.n
	if len(f) != n {
		return fmt.Errorf("diffusion: f has length %d, want %d products", len(f), n)
	}
	return p.op.paramGrad(dgdEll, dgdPi, f, p.u, p.ws)
}
