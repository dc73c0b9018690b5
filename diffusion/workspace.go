package diffusion

// Workspace is the scratch memory of the operator functions for one
// goroutine. Sized by NewWorkspace (or grown on first use), it makes Apply,
// JacobianTVec, ParamGrad and Lost allocation-free; Jacobian with more than
// one step additionally keeps an N_p² buffer after its first call.
type Workspace struct {
	exc  []float64 // steps×n: e⁽ˢ⁾, row s−1
	cur  []float64 // f⁽ˢ⁾
	aux  []float64 // second n-vector (adjoint / tangent / scratch)
	aux2 []float64 // third n-vector
	aux3 []float64 // fourth n-vector
	aux4 []float64 // fifth n-vector
	act  []int     // indices of products in excess at one step
	rows []float64 // saved Jacobian rows (multi-step Jacobian only)
}

// NewWorkspace returns a workspace for N_p = n products and steps diffusion
// steps.
func NewWorkspace(n, steps int) *Workspace {
	ws := new(Workspace)
	ws.ensure(n, steps)
	return ws
}

// ensure grows the workspace to n products and steps steps.
func (ws *Workspace) ensure(n, steps int) {
	if n < 0 {
		n = 0
	}
	if steps < 1 {
		steps = 1
	}
	ws.exc = resize(ws.exc, n*steps)
	ws.cur = resize(ws.cur, n)
	ws.aux = resize(ws.aux, n)
	ws.aux2 = resize(ws.aux2, n)
	ws.aux3 = resize(ws.aux3, n)
	ws.aux4 = resize(ws.aux4, n)
	if cap(ws.act) < n {
		ws.act = make([]int, 0, n)
	}
}
