package gbfs

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/dcgpd/dcgpd/stream/stationstatus"
)

// Station issue reasons (label values of dcgpd_gbfs_station_issues_total).
// The first five skip the station's sample this poll; the others are
// counted when a station enters the state and its sample is published,
// but for no_information, which skips the sample unless
// Config.PublishUninformed.
const (
	ReasonBadStation    = "bad_station"    // could not be read, or last_reported after last_updated
	ReasonDuplicate     = "duplicate"      // station_id listed more than once: every copy refused
	ReasonOverCapacity  = "over_capacity"  // bikes and docks above station_information's capacity
	ReasonStaleReport   = "stale_report"   // last_reported older than MaxReportAge
	ReasonEmptySnapshot = "empty"          // no usable station at all (a feed error)
	ReasonVanished      = "vanished"       // in the previous snapshot, absent from this one
	ReasonNotInstalled  = "not_installed"  // is_installed false
	ReasonNotRenting    = "not_renting"    // is_renting false
	ReasonNotReturning  = "not_returning"  // is_returning false
	ReasonNoInformation = "no_information" // absent from station_information: skipped, or published without capacity
)

// stationState is what the tracker remembers of a station between polls.
type stationState struct {
	present, installed, renting, returning, informed bool
}

// tracker remembers each station's state to report changes once.
type tracker map[string]stationState

func newTracker() tracker { return tracker{} }

// issueList gathers a poll's station issues by reason.
type issueList map[string][]string

func (l issueList) add(reason, format string, a ...any) {
	l[reason] = append(l[reason], fmt.Sprintf(format, a...))
}

// problemIssues files a decoder's problems: duplicates apart from the
// stations that could not be read.
func problemIssues(ps []StationProblem) issueList {
	l := issueList{}
	for _, p := range ps {
		reason := ReasonBadStation
		if errors.Is(p.Err, ErrDuplicateStation) {
			reason = ReasonDuplicate
		}
		l[reason] = append(l[reason], p.Error())
	}
	return l
}

// snapshot checks a station_status file against station_information and
// the previous snapshot, reports the issues, and encodes the usable
// samples as status messages at `at` (the file's last_updated unless that
// is ahead of the poller's clock).
func (p *Poller) snapshot(st *StationStatusFeed, at time.Time) ([][]byte, error) {
	issues := problemIssues(st.Problems)
	back := issueList{} // stations back in service or back in the feed
	samples := make([]stationstatus.Sample, 0, len(st.Stations))
	seen := make(map[string]bool, len(st.Stations))
	for i := range st.Stations {
		s := &st.Stations[i]
		seen[s.ID] = true
		if sample, ok := p.sample(s, st, at, issues); ok {
			samples = append(samples, sample)
		}
		p.transitions(s, issues, back)
	}
	for id, old := range p.track {
		if old.present && !seen[id] {
			issues.add(ReasonVanished, "station %s absent from station_status", id)
			old.present = false
			p.track[id] = old
		}
	}
	p.stationIssues(issues, FeedStationStatus)
	for reason, list := range back {
		sort.Strings(list)
		p.log.Info().Str("change", reason).Int("stations", len(list)).Str("first", firstFew(list)).Msg("gbfs stations back")
	}
	if len(samples) == 0 {
		return nil, &FeedError{File: FeedStationStatus, Reason: ReasonEmptySnapshot,
			Err: fmt.Errorf("no usable station among %d listed", len(st.Stations)+len(st.Problems))}
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i].Station < samples[j].Station })
	var msgs [][]byte
	for start := 0; start < len(samples); start += p.cfg.StationsPerMessage {
		end := min(start+p.cfg.StationsPerMessage, len(samples))
		data, err := stationstatus.Encode(&stationstatus.Message{Schema: stationstatus.SchemaVersion, Feed: p.cfg.Feed,
			At: at, Stations: samples[start:end]})
		if err != nil {
			return nil, &FeedError{File: FeedStationStatus, Reason: ReasonMalformed, Err: err}
		}
		msgs = append(msgs, data)
	}
	p.met.published.WithLabelValues(p.cfg.Feed).Add(float64(len(samples)))
	return msgs, nil
}

// sample checks one station and returns its sample, or records why it is
// skipped this poll. Its age is read at `at`; whether it reported after
// the file was written, on the file's own clock; in a snapshot published
// at the poller's clock, a last_reported after that is capped to it.
func (p *Poller) sample(s *StationStatus, st *StationStatusFeed, at time.Time, issues issueList) (stationstatus.Sample, bool) {
	out := stationstatus.Sample{Station: s.ID, BikesAvailable: s.BikesAvailable, BikesDisabled: s.BikesDisabled,
		DocksDisabled: s.DocksDisabled, Installed: s.IsInstalled, Renting: s.IsRenting, Returning: s.IsReturning,
		LastReported: s.LastReported}
	if s.DocksAvailable >= 0 {
		d := s.DocksAvailable
		out.DocksAvailable = &d
	}
	info, informed := p.info[s.ID]
	if !informed && p.info != nil && !p.cfg.PublishUninformed {
		issues.add(ReasonNoInformation, "station %s", s.ID)
		return out, false
	}
	if informed {
		out.Name = shortName(info.Name, stationstatus.MaxNameBytes)
	}
	if informed && info.Capacity >= 0 {
		c := info.Capacity
		out.Capacity = &c
		if n := out.Occupied(); n > c {
			issues.add(ReasonOverCapacity, "station %s: %d bikes and docks (available %d+%d, disabled %d+%d) exceed the capacity %d",
				s.ID, n, s.BikesAvailable, max(s.DocksAvailable, 0), s.BikesDisabled, s.DocksDisabled, c)
			return out, false
		}
	}
	for _, c := range []int{out.BikesAvailable, out.BikesDisabled, out.DocksDisabled, max(s.DocksAvailable, 0), valueOr(out.Capacity)} {
		if c > stationstatus.MaxCount {
			issues.add(ReasonBadStation, "station %s: a count above %d", s.ID, stationstatus.MaxCount)
			return out, false
		}
	}
	if age := at.Sub(s.LastReported); age > p.cfg.MaxReportAge {
		issues.add(ReasonStaleReport, "station %s: last_reported %s, %v before the snapshot (max %v)",
			s.ID, s.LastReported.Format("2006-01-02T15:04:05Z07:00"), age, p.cfg.MaxReportAge)
		return out, false
	}
	if s.LastReported.After(st.LastUpdated.Add(stationstatus.ReportSlack)) {
		issues.add(ReasonBadStation, "station %s: last_reported %s after last_updated %s",
			s.ID, s.LastReported.Format("2006-01-02T15:04:05Z07:00"), st.LastUpdated.Format("2006-01-02T15:04:05Z07:00"))
		return out, false
	}
	if at.Before(st.LastUpdated) && out.LastReported.After(at) {
		out.LastReported = at
	}
	return out, true
}

func valueOr(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// transitions records a station's changes of state: out of service,
// missing from station_information, back.
func (p *Poller) transitions(s *StationStatus, issues, back issueList) {
	old, known := p.track[s.ID]
	_, informed := p.info[s.ID]
	informed = informed || p.info == nil
	now := stationState{present: true, installed: s.IsInstalled, renting: s.IsRenting, returning: s.IsReturning, informed: informed}
	if !known {
		old = stationState{present: true, installed: true, renting: true, returning: true, informed: true}
	}
	for _, f := range []struct {
		was, is      bool
		reason, back string
	}{
		{old.installed, now.installed, ReasonNotInstalled, "installed"},
		{old.renting, now.renting, ReasonNotRenting, "renting"},
		{old.returning, now.returning, ReasonNotReturning, "returning"},
		{old.informed, now.informed, ReasonNoInformation, "in station_information"},
	} {
		switch {
		case f.was && !f.is && (f.reason != ReasonNoInformation || p.cfg.PublishUninformed):
			issues.add(f.reason, "station %s", s.ID) // a skipped station is counted by sample
		case !f.was && f.is:
			back.add(f.back, "%s", s.ID)
		}
	}
	if known && !old.present {
		back.add("in station_status", "%s", s.ID)
	}
	p.track[s.ID] = now
}

// stationIssues counts each issue and logs one line per reason: when the
// list of stations for that reason changes, else at most once per
// WarnInterval (every issue is counted all the same).
func (p *Poller) stationIssues(issues issueList, file string) {
	now := p.now()
	for key := range p.issueLog {
		if key.file == file && issues[key.reason] == nil {
			delete(p.issueLog, key) // the issue is over: log it again when it returns
		}
	}
	reasons := make([]string, 0, len(issues))
	for r := range issues {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		list := issues[r]
		p.met.stations.WithLabelValues(p.cfg.Feed, r).Add(float64(len(list)))
		key, text := issueKey{file, r}, strings.Join(list, "\n")
		if last, ok := p.issueLog[key]; ok && last.text == text && now.Sub(last.at) < p.cfg.WarnInterval {
			continue
		}
		p.issueLog[key] = issueLogged{text: text, at: now}
		ev := p.log.Warn().Str("file", file).Str("reason", r).Int("stations", len(list)).Str("first", firstFew(list))
		if r == ReasonNoInformation {
			ev = ev.Strs("ids", idsOf(list, 100))
		}
		ev.Msg("gbfs station issue")
	}
}

// issueKey and issueLogged remember the last line logged for a reason.
type issueKey struct{ file, reason string }

type issueLogged struct {
	text string
	at   time.Time
}

// idsOf returns the station ids of "station <id>" issues, at most n.
func idsOf(list []string, n int) []string {
	out := make([]string, 0, min(len(list), n))
	for _, s := range list[:min(len(list), n)] {
		out = append(out, strings.TrimPrefix(s, "station "))
	}
	return out
}

// firstFew joins the first three items of a list.
func firstFew(list []string) string {
	if len(list) > 3 {
		return strings.Join(list[:3], "; ") + fmt.Sprintf("; … %d more", len(list)-3)
	}
	return strings.Join(list, "; ")
}
