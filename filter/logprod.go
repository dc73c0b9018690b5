package filter

import "math"

// logProd accumulates Σ log x_i over positive factors with few calls to
// math.Log, which costs as much as the rest of a small filter step: it
// multiplies the factors while their product stays well inside the
// floating-point range and takes a logarithm only when it would leave it.
// Non-positive or non-finite factors reach the sum as their logarithm.
// The zero value is an empty product.
type logProd struct {
	prod float64 // running product; 0 means 1
	sum  float64 // logarithms already taken
}

// mul multiplies x into the product.
func (l *logProd) mul(x float64) {
	if p := l.prod * x; p > 0x1p-500 && p < 0x1p500 {
		l.prod = p
		return
	}
	l.flush(x)
}

// flush is mul's slow path: the first factor, or one that would take the
// product out of range.
func (l *logProd) flush(x float64) {
	cur := l.prod
	if cur == 0 {
		cur = 1
	}
	if p := cur * x; p > 0x1p-500 && p < 0x1p500 {
		l.prod = p
		return
	}
	l.sum += math.Log(cur) + math.Log(x)
	l.prod = 1
}

// log returns the sum of the logarithms of the factors so far.
func (l *logProd) log() float64 {
	if l.prod == 0 {
		return l.sum
	}
	return l.sum + math.Log(l.prod)
}
