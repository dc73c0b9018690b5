// Package experiment reproduces the paper's synthetic experiments: it
// regenerates a dataset with package synth, fits the five models of the
// paper (Oracle, NCGP, CGP, DCGP-f, DCGP-l) with the settings of the
// authors' experiment notebooks, and scores them with the paper's metrics. The
// `dcgpd experiment` command, the reproduction tests and BenchmarkFitPaper
// all run through it, so they measure the same thing.
//
// sales.go runs the paper's supermarket-sales experiment on the real daily
// sales (outside the repository) with simulated stock-outs, over several
// seeds (Sales, Summarise).
package experiment
