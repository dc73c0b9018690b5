// Package app holds, in its subpackages, the applications built on the
// library: backtest (the backtest of `dcgpd backtest`), charging (EV
// charging records to per-bin demand and supply), demo (`dcgpd demo`),
// experiment (the paper's experiments) and synth (the seeded simulators
// they and the tests run on). Nothing outside cmd/dcgpd and
// the tests imports them; the foundations beside internal/app (errs, geo,
// linalg, mathx, plotstyle, ratelimit) import none of them.
package app
