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
	// Part numbers the message among Parts for this bin.
	Part     int           `json:"part"`
	Parts    int           `json:"parts"`
	Stations []StationRisk `json:"stations"`
}

// StationRisk is one station's outlook; the risk fields are set only
// when Status is "ok".
type StationRisk struct {
	Station string `json:"station"`
	Status  string `json:"status"`
	Detail  string `json:"detail,omitempty"`
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
