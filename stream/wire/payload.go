package wire

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// EmbeddedMaxPayload is the embedded server's largest message: NATS's
// recommended ceiling, so that one estimate message can carry a
// city-size model (2,000 products with horizon 6 take at most 3.3 MB).
const EmbeddedMaxPayload = 8 << 20

// ModelDigestChars is the length of LatentMessage.ModelDigest: 8 bytes
// in hex.
const ModelDigestChars = 16

// ErrOutputTooLarge reports a model whose estimate message can exceed
// the server's max_payload: the server would refuse every one of its
// outputs, so the model must not start.
var ErrOutputTooLarge = errors.New("estimate message can exceed the server's max_payload")

// longestFloat has the longest JSON text the encoder writes for a finite
// float64 ("-0.0000012345678901234567", 25 bytes).
const longestFloat = -1.2345678901234567e-6

// MaxLatentBytes is the largest estimate message (JSON bytes) a model
// named model over products can publish with the given horizon: every
// number at its longest text, every product in the bin and in each
// forecast. It is what the encoder writes for that worst case, so it is
// an exact bound, not an estimate.
func MaxLatentBytes(model string, products []string, horizon int) int {
	// A time with nanoseconds and the largest revision give the longest
	// header; the grid's own times are never longer.
	t := time.Date(2999, 12, 31, 23, 59, 59, 999999999, time.UTC)
	// The bin's own estimates carry the realised demand, the forecasts not.
	// They may also carry the turned-away demand with MaxDiverted
	// diversions, each naming the longest product.
	longest := ""
	for _, p := range products {
		if len(MarshalLatent(&LatentMessage{Model: p})) > len(MarshalLatent(&LatentMessage{Model: longest})) {
			longest = p
		}
	}
	diverted := make([]Diversion, MaxDiverted)
	for i := range diverted {
		diverted[i] = Diversion{Product: longest, Mean: longestFloat}
	}
	worst := func(own bool) []Estimate {
		es := make([]Estimate, len(products))
		for k, p := range products {
			es[k] = Estimate{Product: p, Mean: longestFloat, Var: longestFloat, PredVar: longestFloat,
				Q05: longestFloat, Q95: longestFloat, Observed: false, Censored: false}
			if own {
				x := longestFloat
				es[k].Demand, es[k].DemandVar = &x, &x
				es[k].TurnedAway, es[k].TurnedAwayVar, es[k].Lost, es[k].Diverted = &x, &x, &x, diverted
			}
		}
		return es
	}
	m := &LatentMessage{Schema: SchemaVersion, Model: model, Kind: KindSmoothed, BinStart: t, BinEnd: t,
		Revision: math.MaxInt64, ModelDigest: strings.Repeat("f", ModelDigestChars), Estimates: worst(true)}
	if horizon > 0 {
		m.Kind = KindFiltered
		m.Forecasts = make([]Forecast, horizon)
		for h := range m.Forecasts {
			m.Forecasts[h] = Forecast{Horizon: math.MaxInt32, BinStart: t, BinEnd: t, Estimates: worst(false)}
		}
	}
	return len(MarshalLatent(m))
}

// CheckOutputSize refuses a model whose largest estimate message is over
// maxPayload, naming the sizes and the ways out.
func CheckOutputSize(model string, products []string, horizon int, maxPayload int64) error {
	n := MaxLatentBytes(model, products, horizon)
	if int64(n) <= maxPayload {
		return nil
	}
	return fmt.Errorf("%w: %d products with horizon %d give up to %d bytes, the server allows %d "+
		"(lower horizon, split the model, or raise the server's max_payload)",
		ErrOutputTooLarge, len(products), horizon, n, maxPayload)
}
