package daemon

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/dcgpd/dcgpd/config"
	"github.com/dcgpd/dcgpd/stream/rebalance"
)

// RiskView is one rebalanced system on the page: the stations of its
// newest bin with a usable ranking, ordered for a dispatcher (urgent
// first, earliest by-when first; at most PageRiskStations).
type RiskView struct {
	Name    string `json:"name"`
	Pickups string `json:"pickups"`
	Returns string `json:"returns"`
	// BinStart and BinEnd are the bin of the ranking shown.
	BinStart *time.Time `json:"bin_start,omitempty"`
	BinEnd   *time.Time `json:"bin_end,omitempty"`
	// HorizonSeconds is the risk horizon of p_empty, p_full and the
	// urgency (risk_horizon in whole bins); UrgencyThreshold the
	// probability at which a move is urgent.
	HorizonSeconds   int64   `json:"horizon_seconds"`
	UrgencyThreshold float64 `json:"urgency_threshold"`
	// Urgent counts the urgent stations of the ranking shown.
	Urgent   int             `json:"urgent"`
	Stations []RiskViewEntry `json:"stations"`
	// Statuses counts the newest bin's stations by status.
	Statuses map[string]int `json:"statuses"`
	// StatusAt is the newest status snapshot taken in, StatusAgeSeconds
	// its age when the view was made.
	StatusAt         *time.Time `json:"status_at,omitempty"`
	StatusAgeSeconds int64      `json:"status_age_seconds,omitempty"`
	// Stale marks a ranking shown from a stale or silent feed: the newest
	// status is older than max_status_age, or the newest bin had no
	// station with usable status (the last bin that had is shown);
	// StaleDetail says which, with the ages.
	Stale       bool   `json:"stale"`
	StaleDetail string `json:"stale_detail,omitempty"`
	// Waiting says, until the first ranking, what the system waits for
	// (the first status, the first bin's end; feedwait.go).
	Waiting string `json:"waiting,omitempty"`
	// Restored marks a ranking read back from the risk bucket at start,
	// shown until this process closes its first bin; AgeSeconds is the
	// time since the ranking's bin ended. A restored ranking older than
	// max_status_age is Stale.
	Restored   bool  `json:"restored,omitempty"`
	AgeSeconds int64 `json:"age_seconds,omitempty"`
}

// RiskViewEntry is one station's line on the page.
type RiskViewEntry struct {
	Station string `json:"station"`
	Name    string `json:"name,omitempty"`
	// Status is "ok" when the station's status is usable, else why not.
	Status   string `json:"status"`
	Detail   string `json:"detail,omitempty"`
	Bikes    int    `json:"bikes"`
	Capacity int    `json:"capacity"`
	// Move, By, Urgency and Urgent are the record's (package rebalance).
	Move    int        `json:"move"`
	By      *time.Time `json:"by,omitempty"`
	Urgency float64    `json:"urgency"`
	Urgent  bool       `json:"urgent"`
	// Empty and Full are P(empty) and P(full) within the risk horizon.
	Empty        float64 `json:"p_empty"`
	Full         float64 `json:"p_full"`
	UnmetPickups float64 `json:"unmet_pickups"`
	UnmetReturns float64 `json:"unmet_returns"`
	Best         int     `json:"best"`
	Score        float64 `json:"score"`
}

// PageRiskStations bounds the stations the page lists per system.
const PageRiskStations = 50

// RiskIndex is the page's view of every [[rebalance]] entry.
func (d *Daemon) RiskIndex() []RiskView {
	out := []RiskView{}
	now := time.Now()
	if len(d.rebal) == 0 && len(d.cfg.Rebalance) > 0 {
		return d.startingViews()
	}
	for _, rr := range d.rebal {
		v := riskView(&rr.cfg, rr.job, now)
		d.waiting(&v, rr)
		out = append(out, v)
	}
	return out
}

// riskView is one entry's view at now.
func riskView(rc *config.RebalanceConfig, job *rebalance.Job, now time.Time) RiskView {
	jc := job.Config()
	v := RiskView{Name: rc.Name, Pickups: rc.Pickups, Returns: rc.Returns, UrgencyThreshold: jc.UrgencyThreshold,
		Stations: []RiskViewEntry{}, Statuses: map[string]int{}}
	newest, shown := job.Ranked(), job.Usable()
	if shown == nil {
		shown = newest
	}
	if at := job.Tracker.Newest(); !at.IsZero() {
		at = at.UTC()
		v.StatusAt, v.StatusAgeSeconds = &at, int64(now.Sub(at)/time.Second)
		if age := now.Sub(at); age > jc.MaxStatusAge {
			v.Stale = true
			v.StaleDetail = fmt.Sprintf("newest status %s old (max_status_age %s)", humanAge(age), humanAge(jc.MaxStatusAge))
		}
	}
	if newest == nil {
		return v
	}
	for i := range newest.Stations {
		v.Statuses[newest.Stations[i].Status]++
	}
	if shown != newest {
		v.Stale = true
		v.StaleDetail = joinDetail(v.StaleDetail, fmt.Sprintf("no station had usable status at %s; showing the ranking as of %s, %s before",
			newest.BinEnd.UTC().Format(time.RFC3339), shown.BinEnd.UTC().Format(time.RFC3339), humanAge(newest.BinEnd.Sub(shown.BinEnd))))
	}
	bs, be := shown.BinStart.UTC(), shown.BinEnd.UTC()
	v.BinStart, v.BinEnd = &bs, &be
	v.AgeSeconds = int64(now.Sub(shown.BinEnd) / time.Second)
	if shown.Restored {
		v.Restored = true
		age := now.Sub(shown.BinEnd)
		if age > jc.MaxStatusAge {
			v.Stale = true
			v.StaleDetail = joinDetail(v.StaleDetail, fmt.Sprintf("ranking restored from the risk bucket at start, as of %s, %s old (max_status_age %s)",
				be.Format(time.RFC3339), humanAge(age), humanAge(jc.MaxStatusAge)))
		}
	}
	v.HorizonSeconds = int64(time.Duration(shown.RiskBins) * shown.BinEnd.Sub(shown.BinStart) / time.Second)
	list := append([]rebalance.StationRisk(nil), shown.Stations...)
	rebalance.SortByUrgency(list)
	for i := range list {
		if list[i].Urgent {
			v.Urgent++
		}
		if len(v.Stations) < PageRiskStations {
			v.Stations = append(v.Stations, viewEntry(&list[i], shown.RiskBins))
		}
	}
	return v
}

// viewEntry is a station's line: P(empty) and P(full) within riskBins.
func viewEntry(s *rebalance.StationRisk, riskBins int) RiskViewEntry {
	e := RiskViewEntry{Station: s.Station, Name: s.Name, Status: s.Status, Detail: s.Detail, Bikes: s.Bikes, Capacity: s.Capacity,
		Move: s.Move, By: s.By, Urgency: s.Urgency, Urgent: s.Urgent,
		UnmetPickups: s.UnmetPickups, UnmetReturns: s.UnmetReturns, Best: s.Best, Score: s.Score}
	if k := min(riskBins, len(s.EmptyWithin), len(s.FullWithin)); k > 0 {
		e.Empty, e.Full = s.EmptyWithin[k-1], s.FullWithin[k-1]
	}
	return e
}

// humanAge writes an age for people: "45 s", "42 min", "1 h 5 min",
// "3 d 2 h".
func humanAge(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Round(time.Second)/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Round(time.Minute)/time.Minute))
	case d < 48*time.Hour:
		d = d.Round(time.Minute)
		if m := int(d%time.Hour) / int(time.Minute); m != 0 {
			return fmt.Sprintf("%d h %d min", int(d/time.Hour), m)
		}
		return fmt.Sprintf("%d h", int(d/time.Hour))
	}
	d = d.Round(time.Hour)
	return fmt.Sprintf("%d d %d h", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}

func joinDetail(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// serveRisk answers /api/risk: RiskIndex as JSON.
func (d *Daemon) serveRisk(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(d.RiskIndex())
}
