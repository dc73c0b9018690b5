package flowsim

import (
	"fmt"
	"math"
	"time"

	"github.com/dcgpd/dcgpd/stream/statusflow"
)

// Variant is one way of deriving the flows: the poll interval, whether
// the polls carry vehicle ids, and whether trucks are detected.
type Variant struct {
	Poll        time.Duration
	IDs, Detect bool
}

func (v Variant) String() string {
	src := "counts"
	if v.IDs {
		src = "ids"
	}
	det := "off"
	if v.Detect {
		det = "on"
	}
	return fmt.Sprintf("%v %s trucks-%s", v.Poll, src, det)
}

// Score is a variant's derived hourly flows against what happened, over
// every station-hour.
type Score struct {
	Variant
	Bins int
	// Bias and RMSE of derived − true, per station-hour.
	PickupBias, PickupRMSE, ReturnBias, ReturnRMSE float64
	// HiddenBias is the pickups' bias once ExpectedHidden is added.
	HiddenBias float64
	// Above counts station-hours whose derived pickups or returns exceed
	// the truth (not lower bounds there).
	Above int
	// Censored is the share of station-hours flagged CensoredBelow.
	Censored float64
	// Moved are the bikes the derivation counted as moved (trucks).
	Moved int
}

// scorer accumulates a variant's score.
type scorer struct {
	v                    Variant
	d                    *statusflow.Deriver
	err                  error // the first sample refused
	n, above, cens, mv   int
	sp, sp2, sr, sr2, sh float64
}

func (s *scorer) add(b statusflow.Bin, tr truth) {
	dp, dr := float64(b.Pickups-tr.pickups), float64(b.Returns-tr.returns)
	s.n++
	s.sp += dp
	s.sp2 += dp * dp
	s.sr += dr
	s.sr2 += dr * dr
	s.sh += dp + b.ExpectedHidden
	if dp > 0 || dr > 0 {
		s.above++
	}
	if b.CensoredBelow {
		s.cens++
	}
	s.mv += b.MovedOut + b.MovedIn
}

func (s *scorer) score() Score {
	n := float64(max(1, s.n))
	return Score{Variant: s.v, Bins: s.n, PickupBias: s.sp / n, PickupRMSE: math.Sqrt(s.sp2 / n), ReturnBias: s.sr / n,
		ReturnRMSE: math.Sqrt(s.sr2 / n), HiddenBias: s.sh / n, Above: s.above, Censored: float64(s.cens) / n, Moved: s.mv}
}
