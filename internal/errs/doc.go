// Package errs adds context to errors so that a chain of wraps across
// dcgpd's packages reads with one package prefix, the outermost:
// "filter: product kernel: feature vector 1 has length 1, want 2", not
// "filter: product Gram matrix: kernel: feature vector …". The wrapped
// error stays reachable through errors.Is and errors.As.
package errs
