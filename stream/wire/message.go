package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// SchemaVersion is the version of the JSON messages this daemon reads and
// writes; a message with another version is rejected.
const SchemaVersion = 1

// MaxMessageBytes bounds an input message; larger ones are rejected
// before decoding.
const MaxMessageBytes = 1 << 20

// Observation is one product's demand and supply in one bin.
type Observation struct {
	Product string `json:"product"`
	// Demand is what was sold or used; nil = not observed.
	Demand *float64 `json:"demand"`
	// Supply is what could have been sold; nil = unlimited.
	Supply *float64 `json:"supply,omitempty"`
	// Censored overrides the default demand >= supply.
	Censored *bool `json:"censored,omitempty"`
}

// ObsMessage is the input on <prefix>.obs.<model>: one observation
// (Product set) or a whole bin (Observations set), or a watermark that
// only advances the model's event clock.
type ObsMessage struct {
	Schema       int           `json:"schema"`
	Model        string        `json:"model"`
	BinStart     *time.Time    `json:"bin_start,omitempty"`
	Product      string        `json:"product,omitempty"`
	Demand       *float64      `json:"demand,omitempty"`
	Supply       *float64      `json:"supply,omitempty"`
	Censored     *bool         `json:"censored,omitempty"`
	Observations []Observation `json:"observations,omitempty"`
	// Watermark, alone, tells the daemon that no data older than it will
	// come: bins ending (plus lateness) before it close.
	Watermark *time.Time `json:"watermark,omitempty"`
	// refused marks a message refused before it reached the model (the
	// model still records its sequence).
	refused *Rejection
	// one holds the single form's observation (no allocation of its own).
	one [1]Observation
}

// ErrRejected wraps every reason an input message is refused.
var ErrRejected = errors.New("rejected")

// Rejection is why a message was refused: Reason is a short stable label
// (a metrics label value), Detail the human explanation.
type Rejection struct {
	Reason string
	Detail string
}

func (r *Rejection) Error() string { return r.Reason + ": " + r.Detail }

// Unwrap makes every Rejection match ErrRejected.
func (r *Rejection) Unwrap() error { return ErrRejected }

// Reject returns the rejection for reason, its detail formatted.
func Reject(reason, format string, a ...any) *Rejection {
	return &Rejection{Reason: reason, Detail: fmt.Sprintf(format, a...)}
}

// Refused returns a message that stands for an input refused before it
// reached its model: the model records its sequence and reports rej.
func Refused(rej *Rejection) *ObsMessage { return &ObsMessage{refused: rej} }

// Rejected returns why the message was refused before it reached its
// model (Refused), or nil.
func (m *ObsMessage) Rejected() *Rejection { return m.refused }

// Rejection reasons (label values of dcgpd_observations_rejected_total).
const (
	ReasonMalformed    = "malformed"
	ReasonSchema       = "schema"
	ReasonModel        = "unknown_model"
	ReasonProduct      = "unknown_product"
	ReasonValue        = "bad_value"
	ReasonTime         = "bad_time"
	ReasonTooLarge     = "too_large"
	ReasonLate         = "late"
	ReasonDuplicate    = "conflicting_duplicate"
	ReasonFarFuture    = "too_far_ahead"
	ReasonNumerics     = "numerics"
	ReasonObservations = "empty"
)

// DecodeObs parses and checks an input message's shape and values; the
// model and product names are checked against the configuration later.
func DecodeObs(data []byte) (*ObsMessage, error) {
	if len(data) > MaxMessageBytes {
		return nil, Reject(ReasonTooLarge, "message of %d bytes exceeds %d", len(data), MaxMessageBytes)
	}
	m, ok := decodeObsFast(data)
	if !ok {
		var rej *Rejection
		if m, rej = decodeObsJSON(data); rej != nil {
			return nil, rej
		}
	}
	if rej := checkObsMessage(m); rej != nil {
		return nil, rej
	}
	return m, nil
}

// decodeObsJSON decodes a message strictly (no unknown fields, nothing
// after the object) with encoding/json.
func decodeObsJSON(data []byte) (*ObsMessage, *Rejection) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m ObsMessage
	if err := dec.Decode(&m); err != nil {
		return nil, Reject(ReasonMalformed, "%v", err)
	}
	if dec.More() {
		return nil, Reject(ReasonMalformed, "trailing data after the JSON object")
	}
	return &m, nil
}

// checkObsMessage checks a decoded message's shape and values and turns
// the single-observation form into Observations.
func checkObsMessage(m *ObsMessage) *Rejection {
	if m.Schema != SchemaVersion {
		return Reject(ReasonSchema, "schema %d, this daemon reads %d", m.Schema, SchemaVersion)
	}
	if m.Model == "" {
		return Reject(ReasonMalformed, "missing model")
	}
	if m.Watermark != nil {
		if m.BinStart != nil || m.Product != "" || len(m.Observations) > 0 || m.Demand != nil || m.Supply != nil {
			return Reject(ReasonMalformed, "a watermark message carries nothing else")
		}
		return nil
	}
	if m.BinStart == nil {
		return Reject(ReasonMalformed, "missing bin_start")
	}
	single := m.Product != "" || m.Demand != nil || m.Supply != nil || m.Censored != nil
	switch {
	case single && len(m.Observations) > 0:
		return Reject(ReasonMalformed, "both product fields and observations")
	case single:
		m.one[0] = Observation{Product: m.Product, Demand: m.Demand, Supply: m.Supply, Censored: m.Censored}
		m.Observations = m.one[:]
		m.Product, m.Demand, m.Supply, m.Censored = "", nil, nil, nil
	case len(m.Observations) == 0:
		return Reject(ReasonObservations, "no observations")
	}
	for i, o := range m.Observations {
		if err := checkObservation(o); err != nil {
			err.Detail = fmt.Sprintf("observation %d (%q): %s", i, o.Product, err.Detail)
			return err
		}
	}
	return nil
}

// MaxDemand bounds demand and supply values: beyond it a value is a unit
// or encoding error, not demand.
const MaxDemand = 1e12

func checkObservation(o Observation) *Rejection {
	if o.Product == "" {
		return Reject(ReasonMalformed, "missing product")
	}
	if o.Demand != nil {
		d := *o.Demand
		if math.IsNaN(d) || math.IsInf(d, 0) || d < 0 || d > MaxDemand {
			return Reject(ReasonValue, "demand %v is not a number in [0, %g]", d, MaxDemand)
		}
	}
	if o.Supply != nil {
		u := *o.Supply
		if math.IsNaN(u) || math.IsInf(u, 0) || u < 0 || u > MaxDemand {
			return Reject(ReasonValue, "supply %v is not a number in [0, %g]", u, MaxDemand)
		}
		if o.Demand != nil && *o.Demand > u {
			return Reject(ReasonValue, "demand %v exceeds supply %v", *o.Demand, u)
		}
	}
	if o.Censored != nil && *o.Censored {
		if o.Supply == nil {
			return Reject(ReasonValue, "censored without a supply")
		}
	}
	return nil
}

// Estimate is one product's latent demand in a published message.
type Estimate struct {
	Product string  `json:"product"`
	Mean    float64 `json:"mean"`
	Var     float64 `json:"var"`
	PredVar float64 `json:"pred_var"`
	// Q05 and Q95 are the 5% and 95% quantiles of the latent demand
	// clamped at 0 (never negative; see NewEstimate).
	Q05 float64 `json:"q05"`
	Q95 float64 `json:"q95"`
	// Observed reports whether the bin had this product's demand;
	// Censored whether that demand was capped by the supply.
	Observed bool `json:"observed"`
	Censored bool `json:"censored"`
	// Demand and DemandVar are the mean and variance of the demand that
	// occurred in the bin: the product's own demand f + ε (noisy,
	// uncensored, before any transfer of unmet demand) given the data.
	// Where censored it is above the supply less the inflow of
	// neighbours' unmet demand (above the supply without diffusion: the
	// demand reached it); where observed uncensored it is the observation
	// less the riders its censored neighbours turned away and sent to it
	// (the observation without diffusion or without a censored
	// neighbour, DemandVar 0); where not observed it is the latent mean,
	// with var + the noise variance (see cvi.RealisedDemand; what the
	// interval Demand ± 1.645·√DemandVar covers: docs/forecasting.md). Only the bin's own estimates carry them
	// (filtered and smoothed; not the forecasts, whose bins have no
	// observation yet), and only for the Gaussian, Tobit and diffusion
	// likelihoods (omitted for the count likelihoods).
	Demand    *float64 `json:"demand,omitempty"`
	DemandVar *float64 `json:"demand_var,omitempty"`
	// TurnedAway and TurnedAwayVar are the posterior mean and variance
	// of the demand the product turned away in the bin, max(f − u, 0) of
	// the latent demand f over the supply u; Diverted the part of it
	// expected at each neighbour (the diffusion's transition row; at most
	// MaxDiverted, the largest) and Lost the part lost (its sink). Only a bin's own estimates of a
	// diffusion likelihood carry them, and only where the product was
	// full: censored, or not observed with a finite supply (see
	// cvi.UnmetDemand); absent, it had supply to spare.
	TurnedAway    *float64    `json:"turned_away,omitempty"`
	TurnedAwayVar *float64    `json:"turned_away_var,omitempty"`
	Diverted      []Diversion `json:"diverted,omitempty"`
	Lost          *float64    `json:"lost,omitempty"`
}

// MaxDiverted is the most diversions an estimate lists: the neighbours
// with the largest transition probabilities, so that a message's size
// stays bounded (MaxLatentBytes) on a dense graph.
const MaxDiverted = 8

// Diversion is the part of a product's turned-away demand expected at
// one neighbour.
type Diversion struct {
	Product string  `json:"product"`
	Mean    float64 `json:"mean"`
}

// Forecast is the latent demand Horizon bins after the message's bin.
type Forecast struct {
	Horizon   int        `json:"horizon"`
	BinStart  time.Time  `json:"bin_start"`
	BinEnd    time.Time  `json:"bin_end"`
	Estimates []Estimate `json:"estimates"`
}

// Kinds of published estimates.
const (
	KindFiltered = "filtered"
	KindSmoothed = "smoothed"
)

// LatentMessage is the output on <prefix>.latent.<model>: the latent
// demand of every product in one bin, filtered (as the bin closed, with
// forecasts) or smoothed (a revision after a re-smooth).
type LatentMessage struct {
	Schema   int       `json:"schema"`
	Model    string    `json:"model"`
	Kind     string    `json:"kind"`
	BinStart time.Time `json:"bin_start"`
	BinEnd   time.Time `json:"bin_end"`
	Revision int       `json:"revision"`
	// ModelDigest names the model that made the estimate: the first 8
	// bytes, in hex, of the digest of the model its configuration builds
	// (the one a snapshot records). A changed model (a new model_file,
	// say) publishes under a new digest, so its re-filtered estimates get
	// new ids and are stored beside the old ones, not dropped as
	// duplicates; a consumer keeps the estimates of the digest it wants.
	ModelDigest string     `json:"model_digest,omitempty"`
	Estimates   []Estimate `json:"estimates"`
	Forecasts   []Forecast `json:"forecasts,omitempty"`
	// Missing, when set, says why the bin has no estimate (Estimates is
	// then empty): its numerics failed and the filter kept its state.
	Missing string `json:"missing,omitempty"`
}

// MsgID is the message's de-duplication id (the Nats-Msg-Id header):
// <model>/<bin start, Unix s>/<kind>/<revision>[/<model digest>]. The
// same model, bin, kind, revision and model digest always give the same
// id, so a replay of the same input re-publishes duplicates the stream
// drops, while the estimates of a changed model are stored.
func (m *LatentMessage) MsgID() string {
	if m.ModelDigest != "" {
		return fmt.Sprintf("%s/%d/%s/%d/%s", m.Model, m.BinStart.Unix(), m.Kind, m.Revision, m.ModelDigest)
	}
	return fmt.Sprintf("%s/%d/%s/%d", m.Model, m.BinStart.Unix(), m.Kind, m.Revision)
}

// z95 is the standard normal 95% quantile: q05/q95 = mean ∓ z95·sd.
const z95 = 1.6448536269514722

// NewEstimate fills the quantiles of a Gaussian latent demand f ~
// N(mean, variance). Demand is not negative, so Q05 and Q95 are the
// quantiles of max(f, 0): the Gaussian's clamped at 0, which is exact
// because max(·, 0) is monotone (a quantile below 0 becomes 0). Mean and
// Var stay the Gaussian's moments.
//
// noise is the observation noise variance added to Var in PredVar (the
// variance of an observed count) at the cell's level: σ² + c·max(level, 0)
// with level-dependent noise (cvi.NoiseVarianceAt).
func NewEstimate(product string, mean, variance, noise float64) Estimate {
	sd := math.Sqrt(math.Max(variance, 0))
	return Estimate{Product: product, Mean: mean, Var: variance, PredVar: variance + noise,
		Q05: math.Max(mean-z95*sd, 0), Q95: math.Max(mean+z95*sd, 0)}
}

// RejectionMessage is published on <prefix>.rejected.<model>.
type RejectionMessage struct {
	Schema   int        `json:"schema"`
	Model    string     `json:"model"`
	Reason   string     `json:"reason"`
	Detail   string     `json:"detail"`
	BinStart *time.Time `json:"bin_start,omitempty"`
}

// Output headers naming who published an output in cluster mode (outputs keep their
// deterministic Nats-Msg-Id; these only say which owner sent a copy).
const (
	InstanceHeader = "Dcgpd-Instance"
	EpochHeader    = "Dcgpd-Epoch"
)
