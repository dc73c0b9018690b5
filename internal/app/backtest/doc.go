// Package backtest scores the daemon's forecasts by rolling origin: an
// observations CSV is fed bin by bin through the daemon's own per-bin
// path (stream.Runner with an in-memory sink, no NATS), and every
// filtered estimate and its forecasts for horizons 1..H published from an
// origin in the evaluation span are scored against the truth, next to the
// baselines a rebalancing team computes from the same censored series.
package backtest
