package rebalance

import (
	"fmt"
	"time"
)

// RankingFromEntries is the ranking a system's risk bucket holds: the
// entries of the newest bin among them (every station's entry is written
// with each bin, so that bin holds the whole ranking; a station whose
// newest entry is of an older bin, one no longer in the models say, is
// left out and counted in dropped). It is marked Restored. entries of
// another system, or of another schema, are refused with an error naming
// them; nil when no entry is usable.
func RankingFromEntries(cfg Config, entries []Entry) (rk *Ranked, dropped int, err error) {
	var newest time.Time
	for i := range entries {
		e := &entries[i]
		if e.Name != cfg.Name || e.Schema != SchemaVersion {
			return nil, 0, fmt.Errorf("risk entry of station %q: system %q schema %d, want %q schema %d",
				e.Risk.Station, e.Name, e.Schema, cfg.Name, SchemaVersion)
		}
		if e.BinStart.After(newest) {
			newest = e.BinStart
		}
	}
	for i := range entries {
		e := &entries[i]
		if !e.BinStart.Equal(newest) {
			dropped++
			continue
		}
		if rk == nil {
			rk = &Ranked{Name: cfg.Name, BinStart: e.BinStart, BinEnd: e.BinEnd, Restored: true}
		}
		rk.Stations = append(rk.Stations, e.Risk)
		if h := len(e.Risk.EmptyWithin); h > 0 && rk.RiskBins == 0 {
			rk.RiskBins = riskBins(cfg.RiskHorizon, e.BinEnd.Sub(e.BinStart), h)
		}
	}
	return rk, dropped, nil
}

// Restore shows rk (RankingFromEntries: the ranking stored before a
// restart) until the job computes its own: it is the newest ranking, and
// the usable one when any station in it has a risk. A ranking the job
// already holds is kept.
func (j *Job) Restore(rk *Ranked) {
	if rk == nil {
		return
	}
	if j.ranked.CompareAndSwap(nil, rk) && rk.usable() {
		j.usable.CompareAndSwap(nil, rk)
	}
}
