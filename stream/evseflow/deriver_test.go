package evseflow

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/dcgpd/dcgpd/stream/ocpi"
)

var t0 = time.Date(2024, 5, 6, 8, 0, 0, 0, time.UTC)

// at is t0 plus m minutes.
func at(m float64) time.Time { return t0.Add(time.Duration(m * float64(time.Minute))) }

func st(site, evse string, s ocpi.Status, updated float64) ocpi.StatusEvent {
	return ocpi.StatusEvent{Site: site, EVSE: evse, Status: s, At: at(updated)}
}

func newTest(t *testing.T) *Deriver {
	t.Helper()
	d, err := New(Config{Origin: t0, Bin: 5 * time.Minute, MaxGap: 3 * time.Minute}, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

type poll struct {
	at       float64
	statuses []ocpi.StatusEvent
}

// TestDeriverHandWorked runs a hand-worked sequence of polls (bins of 5
// minutes from 08:00, max_gap 3 minutes) and checks every bin.
func TestDeriverHandWorked(t *testing.T) {
	const (
		av = ocpi.StatusAvailable
		ch = ocpi.StatusCharging
		bl = ocpi.StatusBlocked
		un = ocpi.StatusUnknown
	)
	polls := []poll{
		{0, []ocpi.StatusEvent{st("a", "a-1", av, -60), st("a", "a-2", av, -60), st("b", "b-1", av, -60)}},
		{1, nil},
		{2, []ocpi.StatusEvent{st("a", "a-1", ch, 1.5)}},  // a session starts at 08:01:30: bin 0
		{3, []ocpi.StatusEvent{st("a", "a-1", bl, 2.7)}},  // charging done, the car stays: nothing
		{4, []ocpi.StatusEvent{st("a", "a-2", av, 3.3)}},  // available again, newer last_updated: possible
		{6, []ocpi.StatusEvent{st("a", "a-1", av, 4.99)}}, // the car leaves at 08:04:59: ended in bin 0
		{7, []ocpi.StatusEvent{st("b", "b-1", ch, 20)}},   // last_updated ahead of the poll: at the poll, bin 1
		{8, []ocpi.StatusEvent{st("a", "a-2", ch, -60)}},  // last_updated before the interval: at the poll, bin 1
		{15, []ocpi.StatusEvent{st("a", "a-2", av, 12)}},  // 7 minutes since the last poll: a gap, not counted
		{16, []ocpi.StatusEvent{st("b", "b-1", un, 15.5)}},
		{17, []ocpi.StatusEvent{st("b", "b-1", av, 16.5)}}, // from UNKNOWN: not counted
		{18, nil},
	}
	d := newTest(t)
	for _, p := range polls {
		if err := d.Poll(at(p.at), p.statuses); err != nil {
			t.Fatalf("poll at %v: %v", p.at, err)
		}
	}
	got := d.Advance(at(18))
	got = append(got, d.Advance(at(30))...)
	want := []Bin{
		{Site: "a", Started: 1, Ended: 1, Possible: 1, Coverage: 1, Observed: true, CensoredBelow: true},
		{Site: "b", Coverage: 1, Observed: true},
		{Site: "a", Started: 1, Coverage: 0.6, Observed: true, CensoredBelow: true}, // covered 08:05-08:08
		{Site: "b", Started: 1, Coverage: 0.6, Observed: true, CensoredBelow: true},
		{Site: "a"}, {Site: "b"}, // the gap 08:08-08:15
		{Site: "a", Coverage: 0.6, Observed: true, CensoredBelow: true}, // 08:15-08:18
		{Site: "b", Coverage: 0.2, Observed: true, CensoredBelow: true}, // 08:17-08:18: b-1 offline before
		{Site: "a"}, {Site: "b"}, // no poll after 08:18; emitted once until is max_gap past their end
	}
	if len(got) != len(want) {
		t.Fatalf("%d bins, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		w.Start, w.End = at(float64(5*(i/2))), at(float64(5*(i/2)+5))
		if g.Site != w.Site || !g.Start.Equal(w.Start) || !g.End.Equal(w.End) || g.Started != w.Started || g.Ended != w.Ended ||
			g.Possible != w.Possible || math.Abs(g.Coverage-w.Coverage) > 1e-12 || g.Observed != w.Observed || g.CensoredBelow != w.CensoredBelow {
			t.Errorf("bin %d: %+v, want %+v", i, g, w)
		}
	}
	s := d.Stats()
	if s.Polls != len(polls) || s.Gaps != 1 || s.Untimed != 2 || len(s.Refused) != 0 {
		t.Errorf("stats %+v, want %d polls, 1 gap, 2 untimed, nothing refused", s, len(polls))
	}
	if more := d.Advance(at(30)); len(more) != 0 {
		t.Errorf("bins emitted twice: %+v", more)
	}
}

// TestDeriverHidden: what the counts miss, in hand-worked cases (one
// site of one EVSE, polls every 5 minutes).
func TestDeriverHidden(t *testing.T) {
	const av, ch = ocpi.StatusAvailable, ocpi.StatusCharging
	cases := []struct {
		name                     string
		second                   ocpi.StatusEvent
		started, ended, possible int
	}{
		{"a session started and ended between the polls, last_updated moved", st("a", "a-1", av, 4), 0, 0, 1},
		{"nothing happened", st("a", "a-1", av, -60), 0, 0, 0},
		{"a session started", st("a", "a-1", ch, 2), 1, 0, 0},
	}
	for _, c := range cases {
		d := newTest(t)
		if err := d.Poll(at(0), []ocpi.StatusEvent{st("a", "a-1", av, -60)}); err != nil {
			t.Fatal(err)
		}
		if err := d.Poll(at(5), []ocpi.StatusEvent{c.second}); err != nil {
			t.Fatal(err)
		}
		bins := d.Advance(at(5))
		if len(bins) != 2 {
			t.Fatalf("%s: %d bins, want 2", c.name, len(bins))
		}
		// Interval 5 minutes > max_gap 3: a gap; polls must come within max_gap.
		if bins[0].Observed {
			t.Errorf("%s: a 5-minute interval with max_gap 3 minutes was counted: %+v", c.name, bins[0])
		}
	}
	for _, c := range cases {
		d, err := New(Config{Origin: t0, Bin: 5 * time.Minute, MaxGap: 5 * time.Minute}, []string{"a"})
		if err != nil {
			t.Fatal(err)
		}
		_ = d.Poll(at(0), []ocpi.StatusEvent{st("a", "a-1", av, -60)})
		_ = d.Poll(at(5), []ocpi.StatusEvent{c.second})
		b := d.Advance(at(5))[0]
		if b.Started != c.started || b.Ended != c.ended || b.Possible != c.possible || !b.Observed || b.CensoredBelow != (c.possible > 0) {
			t.Errorf("%s: %+v, want started %d ended %d possible %d", c.name, b, c.started, c.ended, c.possible)
		}
	}
}

// TestDeriverRefuses: a poll out of order is refused whole; a bad status
// alone, the rest of its poll taken; another site's status is ignored.
func TestDeriverRefuses(t *testing.T) {
	const av, ch = ocpi.StatusAvailable, ocpi.StatusCharging
	d := newTest(t)
	if err := d.Poll(at(0), []ocpi.StatusEvent{st("a", "a-1", av, -60), st("a", "a-2", av, -60)}); err != nil {
		t.Fatal(err)
	}
	err := d.Poll(at(1), []ocpi.StatusEvent{st("a", "", ch, 0.5), st("a", "a-2", "FREE", 0.5), st("a", "a-1", ch, 0.5), st("z", "z-1", ch, 0.5)})
	var ee *EventError
	if err == nil || !errors.As(err, &ee) {
		t.Fatalf("bad statuses accepted: %v", err)
	}
	if err := d.Poll(at(1), nil); err == nil {
		t.Error("a poll at the last poll's time accepted")
	}
	if err := d.Poll(at(-30), nil); err == nil {
		t.Error("a poll before the last one accepted")
	}
	if err := d.Poll(at(2), nil); err != nil {
		t.Fatal(err)
	}
	s := d.Stats()
	if s.Refused[ReasonNoEVSE] != 1 || s.Refused[ReasonStatus] != 1 || s.Refused[ReasonOutOfOrder] != 2 || s.Ignored != 1 || s.Polls != 3 {
		t.Errorf("stats %+v", s)
	}
	d2 := newTest(t)
	if err := d2.Poll(at(-10), nil); err == nil {
		t.Error("a poll before the origin accepted")
	}
	// The good status of the refused poll was taken: a-1 started.
	bins := newTestRun(t)
	if bins[0].Started != 1 {
		t.Errorf("the good status of a poll with bad ones was not taken: %+v", bins[0])
	}
}

func newTestRun(t *testing.T) []Bin {
	t.Helper()
	d := newTest(t)
	_ = d.Poll(at(0), []ocpi.StatusEvent{st("a", "a-1", ocpi.StatusAvailable, -60)})
	_ = d.Poll(at(1), []ocpi.StatusEvent{st("a", "", ocpi.StatusCharging, 0.5), st("a", "a-1", ocpi.StatusCharging, 0.5)})
	_ = d.Poll(at(5), nil)
	return d.Advance(at(5))
}

func TestConfigValidate(t *testing.T) {
	for i, c := range []Config{{Bin: 0, MaxGap: time.Minute}, {Bin: time.Minute, MaxGap: 0}} {
		if c.Validate() == nil {
			t.Errorf("case %d accepted: %+v", i, c)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Error(err)
	}
	if _, err := New(DefaultConfig(), []string{"a", "a"}); err == nil {
		t.Error("a site given twice accepted")
	}
}
