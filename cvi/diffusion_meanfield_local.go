package cvi

// A localised expectation for the online refinement's last steps: when
// only a few stations still move, the Newton step is taken on those
// stations alone (the others' sites held), and the step needs only the
// gradient and the curvature block of the moving stations.
//
// With one diffusion step the Jacobian's column a is e_a plus, where a is
// in excess, T's row a: the log-likelihood terms a moving station's mean
// reaches are its own and its row's, C = A ∪ rows(A) over the moving set
// A. Those terms need the demand after diffusion at C, which only the
// candidates whose row or self meets C change. Restricted to them, the
// point loop gives A's gradient and the curvature among A exactly as the
// whole loop does (the terms are the same, in the same order); every other
// entry is incomplete, and E is the sum of C's terms only, not the bin's.

// setLocal restricts the next expectCoupledSparse calls to the terms the
// products marked in active reach (nil: the whole bin).
func (d *Diffusion) setLocal(active []bool) {
	d.local = active
}

// restrictLocal applies d.local to the expectation being set up: it marks
// the terms C (d.mf.kind of the others becomes mfMissing until the next
// mfSetup) and keeps only the candidates whose row or self meets C.
func (d *Diffusion) restrictLocal() {
	s := &d.mf
	np := d.np
	if len(d.inC) != np {
		d.inC = make([]bool, np)
	}
	inC := d.inC
	clear(inC)
	for a, on := range d.local[:np] {
		if on {
			inC[a] = true
		}
	}
	for _, a := range s.cand {
		if !d.local[a] {
			continue
		}
		for _, k := range s.rowCols[a] {
			inC[k] = true
		}
	}
	kept := s.cand[:0]
	for _, a := range s.cand {
		keep := inC[a]
		for _, k := range s.rowCols[a] {
			if keep {
				break
			}
			keep = inC[k]
		}
		if keep {
			kept = append(kept, a)
		}
	}
	s.cand = kept
	for k, c := range inC {
		if !c {
			s.kind[k] = mfMissing
		}
	}
}
