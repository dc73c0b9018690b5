package snapshot

import "time"

// Model is one model's saved state. Times are Unix nanoseconds so the
// encoding is exact; slices hold the same numbers the daemon computes
// with, bit for bit.
type Model struct {
	// Name, Products, BinWidth and Origin identify what the state is of:
	// a snapshot whose bins or products differ from the configured model
	// is refused.
	Name     string
	Products []string
	BinWidth time.Duration
	Origin   int64
	// Applied is the last input stream sequence whose message is in this
	// state; messages at or below it are skipped on redelivery.
	Applied uint64
	// Stream is the input stream's creation time (Unix ns; 0 unknown):
	// sequences mean nothing in a stream created afresh.
	Stream int64
	// Revision counts re-smooths swapped in; Processed counts bins.
	Revision      int64
	Processed     int64
	SinceResmooth int64
	LastResmooth  int64 // Unix ns, 0 = never
	// ModelParams and LikParams are the raw hyperparameters in use.
	ModelParams, LikParams []float64
	// Online is the filter head with its warm-start site; Tail the state
	// at the re-smoothing window's start.
	Online, Tail Online
	// Window holds the processed bins kept for re-smoothing, oldest first.
	Window    []Bin
	Assembler Assembler
	// Job is a re-smooth that was running, to be run again from the same
	// inputs and applied at the same bin; nil if none.
	Job *Job
	// Latest is the newest published filtered message (JSON), so queries
	// answer at once after a restore.
	Latest []byte
	// MeanScale is the prior mean's level per product ([model.mean]
	// level = "scale"; nil: as fitted). Written after Latest only when
	// set, so a file without it reads as before.
	MeanScale []float64
	// ConfigDigest is a digest of the model as its configuration built
	// it (likelihood, hyperparameters, fixed parameters, prior mean),
	// before any re-learning: a restore under a configuration whose digest
	// differs is refused, so that a new model_file never loses silently to
	// the snapshot's state. Empty in snapshots written before digests.
	ConfigDigest []byte
}

// Filter is a Kalman filter head: one mean and covariance per chain.
type Filter struct {
	Started      bool
	Time, LogLik float64
	Mean, Cov    [][]float64
}

// Online is a filter head with the site the next bin's refinement starts
// from.
type Online struct {
	Filter       Filter
	Warm         bool
	Nat1, Nat2   []float64
	PrevObserved []bool
}

// Obs is one product's observation in a bin (Y NaN: missing; Supply +Inf:
// unlimited).
type Obs struct {
	Y, Supply float64
	Censored  bool
}

// Bin is a processed bin of the re-smoothing window.
type Bin struct {
	Index      int64
	Start      int64 // Unix ns
	T          float64
	Obs        []Obs
	Nat1, Nat2 []float64
	Observed   bool
}

// OpenBin is a bin still collecting observations.
type OpenBin struct {
	Index    int64
	Obs      []Obs
	Have     []bool
	Received int64 // Unix ns of the last accepted message
	// MinSeq is the lowest input sequence that filled it (0: unknown).
	MinSeq uint64
}

// Assembler is the bin assembly's event clock and open bins.
type Assembler struct {
	Started  bool
	Next     int64
	Clock    int64 // Unix ns; 0 with ClockSet false = none yet
	ClockSet bool
	Open     []OpenBin
}

// Job is a background re-smooth's inputs.
type Job struct {
	// ApplyAt is the index of the bin before which the result is swapped
	// in.
	ApplyAt                int64
	Bins                   []Bin
	Start                  *Filter // nil = the prior
	ModelParams, LikParams []float64
	Relearn                bool
}
