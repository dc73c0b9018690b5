package statusflow

import (
	"fmt"
	"slices"
	"time"

	"github.com/dcgpd/dcgpd/stream/stationstatus"
)

// Sample is one station's state at one time.
type Sample struct {
	Station string
	// At is when the state was true (the station's last report).
	At time.Time
	// Bikes are the bikes docked, available and disabled (a bike marked
	// disabled has not left).
	Bikes int
	// Docks are the empty docks, available and disabled; -1 when not
	// published. Only checked: a change of Bikes + Docks is counted as a
	// dock change in Stats.
	Docks              int
	Renting, Returning bool
	// HasVehicles says Vehicles lists the ids of the bikes docked (from
	// GBFS vehicle_status / free_bike_status); when both samples of an
	// interval have them, the flows are counted by id.
	HasVehicles bool
	Vehicles    []string
}

// SampleError is why a sample was refused: Reason is a short stable
// label (a metrics label value), Detail the explanation.
type SampleError struct {
	Reason, Detail string
}

func (e *SampleError) Error() string { return "statusflow: " + e.Reason + ": " + e.Detail }

// Refusal reasons.
const (
	ReasonStation    = "bad_station"
	ReasonTime       = "bad_time"
	ReasonCount      = "bad_count"
	ReasonVehicles   = "bad_vehicles"
	ReasonOutOfOrder = "out_of_order"
	ReasonConflict   = "conflict"
	ReasonLate       = "late"
)

func refuse(reason, format string, a ...any) *SampleError {
	return &SampleError{Reason: reason, Detail: fmt.Sprintf(format, a...)}
}

// maxSpan bounds a sample's distance from the grid's origin (time
// differences saturate near 292 years).
const maxSpan = 200 * 365 * 24 * time.Hour

// check validates s on its own against the grid's origin.
func check(s *Sample, origin time.Time) *SampleError {
	switch {
	case s.Station == "":
		return refuse(ReasonStation, "station missing")
	case s.At.Before(origin) || s.At.Sub(origin) >= maxSpan:
		return refuse(ReasonTime, "station %q: time %s outside the grid (origin %s)", s.Station, s.At.Format(time.RFC3339), origin.Format(time.RFC3339))
	case s.Bikes < 0 || s.Bikes > stationstatus.MaxCount:
		return refuse(ReasonCount, "station %q: bikes %d outside 0..%d", s.Station, s.Bikes, stationstatus.MaxCount)
	case s.Docks < -1 || s.Docks > stationstatus.MaxCount:
		return refuse(ReasonCount, "station %q: docks %d outside -1..%d", s.Station, s.Docks, stationstatus.MaxCount)
	case !s.HasVehicles && len(s.Vehicles) > 0:
		return refuse(ReasonVehicles, "station %q: vehicle ids given without HasVehicles", s.Station)
	case len(s.Vehicles) > stationstatus.MaxCount:
		return refuse(ReasonVehicles, "station %q: %d vehicle ids exceed %d", s.Station, len(s.Vehicles), stationstatus.MaxCount)
	}
	ids := slices.Clone(s.Vehicles)
	slices.Sort(ids)
	for i, id := range ids {
		if id == "" {
			return refuse(ReasonVehicles, "station %q: empty vehicle id", s.Station)
		}
		if i > 0 && ids[i-1] == id {
			return refuse(ReasonVehicles, "station %q: vehicle %q listed twice", s.Station, id)
		}
	}
	return nil
}

// FromStatus turns a station status message into samples: the bikes
// docked are available plus disabled, the docks likewise (-1 when
// unlimited), and each sample's time is the station's last report (the
// state is as of then; a later snapshot that repeats it is a duplicate,
// counted and ignored by the Deriver), or the snapshot's time when the
// report is later than the snapshot.
func FromStatus(m *stationstatus.Message) []Sample {
	out := make([]Sample, 0, len(m.Stations))
	for _, st := range m.Stations {
		at := st.LastReported
		if at.IsZero() || at.After(m.At) {
			at = m.At
		}
		docks := -1
		if st.DocksAvailable != nil {
			docks = *st.DocksAvailable + st.DocksDisabled
		}
		out = append(out, Sample{Station: st.Station, At: at, Bikes: st.BikesAvailable + st.BikesDisabled, Docks: docks,
			Renting: st.Installed && st.Renting, Returning: st.Installed && st.Returning})
	}
	return out
}
