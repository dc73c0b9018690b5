package rebalance

import (
	"encoding/json"
	"fmt"
	"time"
)

// SchemaVersion is the version of the risk messages.
const SchemaVersion = 1

// Station statuses in a risk message.
const (
	StatusOK           = "ok"             // the risk fields are set
	StatusNoStatus     = "no_status"      // no fresh status sample at or before the bin's end
	StatusStale        = "stale_status"   // the newest is older than max_status_age
	StatusOutOfService = "out_of_service" // not installed, not renting or not returning
	StatusNoCapacity   = "no_capacity"    // neither docks available nor a capacity given
	StatusNoForecast   = "no_forecast"    // a model's forecast for the station is missing
	StatusError        = "error"          // the chain refused the input (detail says why)
)

// RiskMessage is published on <prefix>.risk.<name> once both models have
// closed a bin (in parts of at most StationsPerMessage stations and
// about MessageBytes).
type RiskMessage struct {
	Schema int    `json:"schema"`
	Name   string `json:"name"`
	// BinStart and BinEnd are the bin both models just closed; the risk
	// starts from the inventory as of BinEnd and covers the next
	// Horizon bins.
	BinStart time.Time `json:"bin_start"`
	BinEnd   time.Time `json:"bin_end"`
	Horizon  int       `json:"horizon"`
	// PlanningBins is the UDF's horizon.
	PlanningBins int `json:"planning_bins"`
	// RiskBins is the risk horizon in bins (risk_horizon rounded up to
	// whole bins, at most Horizon): the stated P(empty) and P(full) are
	// EmptyWithin[RiskBins-1] and FullWithin[RiskBins-1], and a move's
	// urgency and by-when are read over it.
	RiskBins int `json:"risk_bins"`
	// UrgencyThreshold is the probability at which a move is urgent.
	UrgencyThreshold float64 `json:"urgency_threshold"`
	// Part numbers the message among Parts for this bin.
	Part     int           `json:"part"`
	Parts    int           `json:"parts"`
	Stations []StationRisk `json:"stations"`
}

// StationRisk is one station's outlook; the risk fields are set only
// when Status is "ok".
type StationRisk struct {
	Station string `json:"station"`
	// Name is the station's name for people, from its status samples
	// (absent when no sample carried one).
	Name   string `json:"name,omitempty"`
	Status string `json:"status"`
	Detail string `json:"detail,omitempty"`
	// StatusAt is the time of the status sample the inventory comes from.
	StatusAt *time.Time `json:"status_at,omitempty"`
	// Capacity is the usable docks (bikes + docks available) and Bikes
	// the usable bikes, always written (0 is an empty station, not a
	// missing value; both are 0 when the status left them unknown).
	Capacity int `json:"capacity"`
	Bikes    int `json:"bikes"`
	// EmptyWithin[h-1] and FullWithin[h-1]: P(empty / full at some time
	// within h bins).
	EmptyWithin []float64 `json:"empty_within,omitempty"`
	FullWithin  []float64 `json:"full_within,omitempty"`
	// UnmetPickups and UnmetReturns: expected over the horizon.
	UnmetPickups float64 `json:"unmet_pickups"`
	UnmetReturns float64 `json:"unmet_returns"`
	// UDF[s], s = 0..Capacity; Best = s*.
	UDF  []float64 `json:"udf,omitempty"`
	Best int       `json:"best"`
	// OneMore and OneLess: the UDF's change for one bike more or less
	// (when CanAdd / CanRemove).
	OneMore   float64 `json:"one_more"`
	OneLess   float64 `json:"one_less"`
	CanAdd    bool    `json:"can_add"`
	CanRemove bool    `json:"can_remove"`
	// Move is the bikes to add (> 0) or remove (< 0) to reach Best,
	// bounded by the capacity and the bikes there; 0 without a risk.
	Move int `json:"move"`
	// Urgency is the probability the move averts within the risk
	// horizon (P(empty) for an add, P(full) for a removal; 0 without a
	// move); Urgent when it reaches the urgency threshold, and then By is
	// the start of the first forecast bin at which it does: the time by
	// which the move should be done.
	Urgency float64    `json:"urgency"`
	Urgent  bool       `json:"urgent"`
	By      *time.Time `json:"by,omitempty"`
	// Score ranks the stations at risk: the larger of P(empty) and
	// P(full) within the planning horizon.
	Score float64 `json:"score"`
}

// MsgID is the de-duplication id of one part of a bin's risk.
func (m *RiskMessage) MsgID() string {
	return fmt.Sprintf("%s/%d/risk/%d", m.Name, m.BinStart.Unix(), m.Part)
}

// Marshal encodes the message.
func (m *RiskMessage) Marshal() ([]byte, error) { return json.Marshal(m) }
