package feedflow

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/dcgpd/dcgpd/stream/stationstatus"
	"github.com/dcgpd/dcgpd/stream/statusflow"
	"github.com/dcgpd/dcgpd/stream/wire"
)

// Config names the two models and the derivation's grid and settings.
type Config struct {
	// Flow is the derivation (its Origin and Bin are the models').
	Flow statusflow.Config
	// Pickups and Returns are the models' names; Prefix the subjects'.
	Pickups, Returns, Prefix string
	// Stations are the models' products: samples of other stations are
	// counted (Stats.Ignored) and dropped; nil takes every station.
	Stations []string
}

// Out is one message to publish: Subject, a Nats-Msg-Id and the JSON.
type Out struct {
	Subject, MsgID string
	Data           []byte
}

// Stats counts what Flows did.
type Stats struct {
	// Bins is the station-bins derived; Observed those sent as an
	// observation, Censored those of them censored from below.
	Bins, Observed, Censored int
	// ZeroBounds counts flow-bins not sent: a count of 0 censored from
	// below (Observation).
	ZeroBounds int
	// Unchanged counts samples that repeated a station's last report;
	// Ignored those of stations the models do not have.
	Unchanged, Ignored int
	// Refused counts samples statusflow refused, by reason.
	Refused map[string]int
}

// maxObsPerMessage bounds a bin's observations per message (each well
// under the daemon's 1 MiB input limit).
const maxObsPerMessage = 2000

// Flows derives the models' observations from status messages. It is
// not safe for concurrent use.
type Flows struct {
	cfg  Config
	d    *statusflow.Deriver
	last map[string]time.Time // each station's newest sample taken
	keep map[string]bool      // Config.Stations (nil: every station)
	// at is the newest snapshot's time, prev the one before it: the
	// deriver is advanced to prev, so a station's report may reach the
	// feed one poll late.
	at, prev time.Time
	stats    Stats
}

// New returns Flows for a valid cfg.
func New(cfg Config) (*Flows, error) {
	d, err := statusflow.New(cfg.Flow)
	if err != nil {
		return nil, err
	}
	if cfg.Pickups == "" || cfg.Returns == "" || cfg.Prefix == "" {
		return nil, fmt.Errorf("feedflow: pickups %q, returns %q and prefix %q are all needed", cfg.Pickups, cfg.Returns, cfg.Prefix)
	}
	f := &Flows{cfg: cfg, d: d, last: map[string]time.Time{}, stats: Stats{Refused: map[string]int{}}}
	if cfg.Stations != nil {
		f.keep = make(map[string]bool, len(cfg.Stations))
		for _, s := range cfg.Stations {
			f.keep[s] = true
		}
	}
	return f, nil
}

// Stats returns a copy of the counts so far.
func (f *Flows) Stats() Stats {
	s := f.stats
	s.Refused = make(map[string]int, len(f.stats.Refused))
	for k, v := range f.stats.Refused {
		s.Refused[k] = v
	}
	return s
}

// Lag is how long after a bin's end its flows can be derived: statusflow
// waits max(MaxGap, TruckWindow) for the intervals and truck runs that
// touch it, and Flows one more snapshot.
func (f *Flows) Lag() time.Duration { return max(f.cfg.Flow.MaxGap, f.cfg.Flow.TruckWindow) }

// Take derives from one status message and returns the observation and
// watermark messages of every bin that became complete, in bin order. A
// sample statusflow refuses is counted (Stats) and the rest kept.
func (f *Flows) Take(m *stationstatus.Message) ([]Out, error) {
	if m.At.After(f.at) {
		f.prev, f.at = f.at, m.At
	}
	for _, s := range statusflow.FromStatus(m) {
		if f.keep != nil && !f.keep[s.Station] {
			f.stats.Ignored++
			continue
		}
		if last, ok := f.last[s.Station]; ok && !s.At.After(last) {
			f.stats.Unchanged++
			continue
		}
		if err := f.d.Add(s); err != nil {
			f.stats.Refused[refusal(err)]++
			continue
		}
		f.last[s.Station] = s.At
	}
	if f.prev.IsZero() {
		return nil, nil
	}
	bins, err := f.d.Advance(f.prev)
	if err != nil {
		return nil, fmt.Errorf("feedflow: %w", err)
	}
	return f.messages(bins)
}

func refusal(err error) string {
	if se, ok := err.(*statusflow.SampleError); ok {
		return se.Reason
	}
	return "error"
}

// messages groups bins (by station, then time) by bin start and writes
// each bin's observations for both models, then its watermarks.
func (f *Flows) messages(bins []statusflow.Bin) ([]Out, error) {
	byStart := map[time.Time][]statusflow.Bin{}
	var starts []time.Time
	for _, b := range bins {
		if _, ok := byStart[b.Start]; !ok {
			starts = append(starts, b.Start)
		}
		byStart[b.Start] = append(byStart[b.Start], b)
	}
	slices.SortFunc(starts, time.Time.Compare)
	var out []Out
	for _, start := range starts {
		group := byStart[start]
		for _, flow := range []struct {
			model string
			count func(*statusflow.Bin) int
		}{{f.cfg.Pickups, func(b *statusflow.Bin) int { return b.Pickups }}, {f.cfg.Returns, func(b *statusflow.Bin) int { return b.Returns }}} {
			msgs, err := f.binMessages(flow.model, start, group, flow.count)
			if err != nil {
				return nil, err
			}
			out = append(out, msgs...)
		}
		f.count(group)
	}
	return out, nil
}

// count adds a bin's stations to the stats (once for both flows).
func (f *Flows) count(group []statusflow.Bin) {
	for i := range group {
		f.stats.Bins++
		if group[i].Observed {
			f.stats.Observed++
			if group[i].CensoredBelow {
				f.stats.Censored++
			}
		}
	}
}

// binMessages is one model's observations of one bin (in parts of at
// most maxObsPerMessage) and its watermark at the bin's end.
func (f *Flows) binMessages(model string, start time.Time, group []statusflow.Bin, count func(*statusflow.Bin) int) ([]Out, error) {
	subject := f.cfg.Prefix + ".obs." + model
	id := model + "/" + strconv.FormatInt(start.Unix(), 10)
	var obs []wire.Observation
	for i := range group {
		if o, ok := Observation(&group[i], count(&group[i])); ok {
			obs = append(obs, o)
		} else if group[i].Observed {
			f.stats.ZeroBounds++
		}
	}
	var out []Out
	for part := 0; part*maxObsPerMessage < len(obs); part++ {
		chunk := obs[part*maxObsPerMessage : min((part+1)*maxObsPerMessage, len(obs))]
		data, err := json.Marshal(&wire.ObsMessage{Schema: wire.SchemaVersion, Model: model, BinStart: &start, Observations: chunk})
		if err != nil {
			return nil, fmt.Errorf("feedflow: %s bin %s: %w", model, start.Format(time.RFC3339), err)
		}
		out = append(out, Out{Subject: subject, MsgID: id + "/flow/" + strconv.Itoa(part), Data: data})
	}
	end := start.Add(f.cfg.Flow.Bin)
	data, err := json.Marshal(&wire.ObsMessage{Schema: wire.SchemaVersion, Model: model, Watermark: &end})
	if err != nil {
		return nil, fmt.Errorf("feedflow: %s watermark %s: %w", model, end.Format(time.RFC3339), err)
	}
	return append(out, Out{Subject: subject, MsgID: id + "/watermark", Data: data}), nil
}

// Observation is a derived bin's observation of one flow with count n:
// none when no poll interval covered the bin; censored from below at n
// (demand = supply = n, censored) when statusflow flagged the bin
// CensoredBelow; else n with unlimited supply. A count of 0 censored
// from below is none too: demand >= 0 says nothing, and a diffusion
// likelihood would read a censored cell with supply 0 as a station that
// turned away all its demand to its neighbours.
func Observation(b *statusflow.Bin, n int) (wire.Observation, bool) {
	if !b.Observed || (b.CensoredBelow && n == 0) {
		return wire.Observation{}, false
	}
	v := float64(n)
	o := wire.Observation{Product: b.Station, Demand: &v}
	if b.CensoredBelow {
		yes := true
		o.Supply, o.Censored = &v, &yes
	}
	return o, true
}
