package charging

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2024, 5, 6, 8, 0, 0, 0, time.UTC)

func at(min float64) time.Time { return t0.Add(time.Duration(min * float64(time.Minute))) }

func sess(start, end float64, charger string) Session {
	return Session{Start: at(start), End: at(end), Charger: charger}
}

// twoSites: site a (pool 1, chargers a1 a2) and site b (pool 1, charger
// b1) 100 m apart.
func twoSites() *Network {
	return &Network{
		Sites:  []Site{{Name: "a", Lat: 34, Lon: -118, Pool: 1}, {Name: "b", Lat: 34.0009, Lon: -118, Pool: 1}},
		SiteOf: map[string]int{"a1": 0, "a2": 0, "b1": 1},
	}
}

func TestSimulateByHand(t *testing.T) {
	cases := []struct {
		name     string
		divert   float64
		sessions []Session
		// per bin (5 min from t0) and site: arrivals, served, supply,
		// censored, turned away, lost, diverted to b (from a)
		want [][2]Cell
	}{
		{
			name: "free site serves; a second arrival diverts to the free neighbour", divert: 1,
			sessions: []Session{sess(1, 7, "a1"), sess(2, 4, "a2")},
			want: [][2]Cell{
				{{Arrivals: 2, Served: 1, Supply: 1, Censored: true, TurnedAway: 1, DivertedTo: []int{0, 1}},
					{Served: 1, Supply: 1, Censored: true}},
				{{Supply: 0, Censored: true}, {Supply: 1}},
			},
		},
		{
			name: "no diversion: the driver is lost", divert: 0,
			sessions: []Session{sess(1, 7, "a1"), sess(2, 4, "a2")},
			want: [][2]Cell{
				{{Arrivals: 2, Served: 1, Supply: 1, Censored: true, TurnedAway: 1, Lost: 1, DivertedTo: []int{0, 0}}, {Supply: 1}},
				{{Supply: 0, Censored: true}, {Supply: 1}},
			},
		},
		{
			name: "both full: the diverted driver is lost at b", divert: 1,
			sessions: []Session{sess(0, 20, "b1"), sess(1, 7, "a1"), sess(2, 4, "a2")},
			want: [][2]Cell{
				{{Arrivals: 2, Served: 1, Supply: 1, Censored: true, TurnedAway: 1, Lost: 1, DivertedTo: []int{0, 0}},
					{Arrivals: 1, Served: 1, Supply: 1, Censored: true}},
				{{Supply: 0, Censored: true}, {Supply: 0, Censored: true}},
			},
		},
		{
			name: "a charger freed in the bin is supply; a freed charger taken at once", divert: 1,
			sessions: []Session{sess(-3, 6, "a1"), sess(6, 8, "a2"), sess(8, 9, "a1")},
			want: [][2]Cell{
				{{Supply: 0, Censored: true}, {Supply: 1}},
				{{Arrivals: 2, Served: 2, Supply: 2, Censored: true}, {Supply: 1}},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Simulate(tc.sessions, twoSites(), Protocol{Divert: tc.divert, Lengthscale: 500, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			tb, err := o.Bins(t0, 5*time.Minute, len(tc.want))
			if err != nil {
				t.Fatal(err)
			}
			for b, row := range tc.want {
				for s, w := range row {
					got := tb.Cells[b][s]
					if w.DivertedTo == nil {
						w.DivertedTo = []int{0, 0}
					}
					if got.Arrivals != w.Arrivals || got.Served != w.Served || got.Supply != w.Supply || got.Censored != w.Censored ||
						got.TurnedAway != w.TurnedAway || got.Lost != w.Lost || got.DivertedTo[0] != w.DivertedTo[0] || got.DivertedTo[1] != w.DivertedTo[1] {
						t.Errorf("bin %d site %d: got %+v, want %+v", b, s, got, w)
					}
				}
			}
		})
	}
}

func TestFullFractionAndOccupancy(t *testing.T) {
	// Site a, pool 1: busy from minute 1 to 4 of bin 0 (full 3/5, mean
	// occupancy 0.6), then from 4 to 10: bin 0 full 4/5, bin 1 full
	// throughout.
	o, err := Simulate([]Session{sess(1, 4, "a1"), sess(4, 10, "a2")}, twoSites(), Protocol{Divert: 0, Lengthscale: 500})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := o.Bins(t0, 5*time.Minute, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		b          int
		full, occ  float64
		censored   bool
		supply, sv int
	}{{0, 0.8, 0.8, true, 2, 2}, {1, 1, 1, true, 0, 0}, {2, 0, 0, false, 1, 0}} {
		got := tb.Cells[c.b][0]
		if math.Abs(got.FullFraction-c.full) > 1e-12 || math.Abs(got.Occupancy-c.occ) > 1e-12 || got.Censored != c.censored || got.Supply != c.supply || got.Served != c.sv {
			t.Errorf("bin %d: got %+v, want full %v occupancy %v censored %v supply %d served %d", c.b, got, c.full, c.occ, c.censored, c.supply, c.sv)
		}
	}
}

// TestCensorAbove: only bins full for more than the fraction stay
// censored; the others take the supply the site had. Site a (pool 1) is
// full 2/5 of bin 0 (busy minutes 3-5, one served, a charger free at the
// start), all of bin 1, and 2/5 of bin 2 (freed at minute 12).
func TestCensorAbove(t *testing.T) {
	o, err := Simulate([]Session{sess(3, 12, "a1")}, twoSites(), Protocol{Divert: 0, Lengthscale: 500})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		frac     float64
		censored [3]bool
		supply   [3]int
	}{
		{0, [3]bool{true, true, true}, [3]int{1, 0, 0}},
		{0.3, [3]bool{true, true, true}, [3]int{1, 0, 0}},
		{0.5, [3]bool{false, true, false}, [3]int{1, 0, 1}},
	} {
		tb, err := o.Bins(t0, 5*time.Minute, 3)
		if err != nil {
			t.Fatal(err)
		}
		tb.CensorAbove(c.frac)
		for b := range 3 {
			if got := tb.Cells[b][0]; got.Censored != c.censored[b] || got.Supply != c.supply[b] {
				t.Errorf("fraction %v bin %d: censored %v supply %d, want %v and %d", c.frac, b, got.Censored, got.Supply, c.censored[b], c.supply[b])
			}
		}
	}
}

// TestSimulateInvariants checks the conservation laws and the pools on
// simulated sessions, and the occupancy against a count at sample times.
func TestSimulateInvariants(t *testing.T) {
	cfg := DefaultSynthConfig()
	cfg.Days = 7
	ss, err := Synthesize(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sites := []Site{{Name: "a", Lat: 34.137, Lon: -118.125, Pool: 3}, {Name: "b", Lat: 34.140, Lon: -118.125, Pool: 3}, {Name: "c", Lat: 34.143, Lon: -118.125, Pool: 2}}
	n := GroupChargers(Chargers(ss), sites)
	o, err := Simulate(ss, n, Protocol{Divert: 0.6, Lengthscale: 400, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	width := 5 * time.Minute
	nb := cfg.Days * 288
	tb, err := o.Bins(cfg.Start, width, nb)
	if err != nil {
		t.Fatal(err)
	}
	var arrivals, served, lost, turned, diverted int
	for b, row := range tb.Cells {
		for s, c := range row {
			arrivals += c.Arrivals
			served += c.Served
			lost += c.Lost
			turned += c.TurnedAway
			var d int
			for _, x := range c.DivertedTo {
				d += x
			}
			diverted += d
			if c.TurnedAway != d+c.Lost {
				t.Fatalf("bin %d site %d: turned away %d != diverted %d + lost %d", b, s, c.TurnedAway, d, c.Lost)
			}
			if c.Served > c.Supply {
				t.Fatalf("bin %d site %d: served %d above supply %d", b, s, c.Served, c.Supply)
			}
			if c.TurnedAway > 0 && !c.Censored {
				t.Fatalf("bin %d site %d: turned drivers away uncensored", b, s)
			}
			if c.Occupancy > float64(sites[s].Pool)+1e-9 || c.FullFraction < 0 || c.FullFraction > 1+1e-12 {
				t.Fatalf("bin %d site %d: occupancy %v full %v out of range", b, s, c.Occupancy, c.FullFraction)
			}
		}
	}
	if arrivals != len(ss) || served != arrivals-lost {
		t.Fatalf("arrivals %d (sessions %d), served %d, lost %d: not conserved", arrivals, len(ss), served, lost)
	}
	if turned == 0 || diverted == 0 || lost == 0 {
		t.Fatalf("turned away %d, diverted %d, lost %d: the pools never filled", turned, diverted, lost)
	}
	// Occupancy at the middle of each bin ≈ its mean occupancy is not
	// exact; compare the busy count at every bin start with a direct count.
	for b := 0; b < nb; b += 7 {
		bs := tb.BinStart(b)
		for s := range sites {
			busy := 0
			for _, a := range o.Arrivals {
				if a.ServedAt == s && !a.Time.After(bs) && a.Time.Add(a.Duration).After(bs) {
					busy++
				}
			}
			if busy > sites[s].Pool {
				t.Fatalf("bin %d site %d: %d busy at its start, pool %d", b, s, busy, sites[s].Pool)
			}
			c := tb.Cells[b][s]
			if !c.Censored && c.Supply < sites[s].Pool-busy {
				t.Fatalf("bin %d site %d: supply %d below the %d chargers free at its start", b, s, c.Supply, sites[s].Pool-busy)
			}
		}
	}
	t.Logf("%d arrivals, %d turned away (%d diverted and served, %d lost)", arrivals, turned, diverted, lost)
}

func TestReadSessions(t *testing.T) {
	cases := []struct {
		name, in, err string
		n             int
	}{
		{"acn columns", "start,end,done_charging,station\n2021-05-01T21:56:16Z,2021-05-01T22:40:48Z,,2-39-125-21\n2021-05-01T20:42:47Z,2021-05-01T21:32:12Z,,x\n", "", 2},
		{"charger column", "charger,start,end\nc1,2021-05-01T21:56:16Z,2021-05-01T22:40:48Z\n", "", 1},
		{"no end column", "start,station\n", `no "end" column`, 0},
		{"end before start", "start,end,charger\n2021-05-01T21:56:16Z,2021-05-01T20:40:48Z,c\n", "s.csv:2: end", 0},
		{"bad time", "start,end,charger\nyesterday,2021-05-01T20:40:48Z,c\n", "s.csv:2: start", 0},
		{"empty charger", "start,end,charger\n2021-05-01T20:40:48Z,2021-05-01T21:40:48Z, \n", "empty charger", 0},
		{"short row", "start,end,charger\n2021-05-01T20:40:48Z\n", "s.csv:2", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ss, err := ReadSessions(strings.NewReader(tc.in), "s.csv")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(ss) != tc.n {
				t.Fatalf("%d sessions, want %d", len(ss), tc.n)
			}
			for i := 1; i < len(ss); i++ {
				if ss[i].Start.Before(ss[i-1].Start) {
					t.Fatal("sessions not sorted by start")
				}
			}
		})
	}
}

func TestSessionsRoundTrip(t *testing.T) {
	cfg := DefaultSynthConfig()
	cfg.Days = 2
	ss, err := Synthesize(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteSessions(&buf, ss); err != nil {
		t.Fatal(err)
	}
	back, err := ReadSessions(&buf, "rt")
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(ss) {
		t.Fatalf("%d sessions back, wrote %d", len(back), len(ss))
	}
	for i := range ss {
		if !back[i].Start.Equal(ss[i].Start) || !back[i].End.Equal(ss[i].End) || back[i].Charger != ss[i].Charger {
			t.Fatalf("session %d: %+v back, wrote %+v", i, back[i], ss[i])
		}
	}
}

func TestValidateRefuses(t *testing.T) {
	bad := []error{
		(&Network{}).Validate(),
		(&Network{Sites: []Site{{Name: "a", Pool: 0}}}).Validate(),
		(&Network{Sites: []Site{{Name: "a", Pool: 1}, {Name: "a", Pool: 1}}}).Validate(),
		(&Network{Sites: []Site{{Name: "a", Pool: 1}}, SiteOf: map[string]int{"x": 3}}).Validate(),
		Protocol{Divert: 1.5, Lengthscale: 1}.Validate(),
		Protocol{Divert: 0.5}.Validate(),
		SynthConfig{}.Validate(),
	}
	for i, err := range bad {
		if err == nil {
			t.Errorf("case %d: accepted", i)
		}
	}
	if _, err := Simulate([]Session{sess(0, 1, "zz")}, twoSites(), Protocol{Lengthscale: 1}); err == nil {
		t.Error("a session on an unknown charger was accepted")
	}
	if _, err := Simulate([]Session{sess(2, 3, "a1"), sess(0, 1, "a1")}, twoSites(), Protocol{Lengthscale: 1}); err == nil {
		t.Error("unsorted sessions were accepted")
	}
}

func FuzzReadSessions(f *testing.F) {
	f.Add("start,end,station\n2021-05-01T21:56:16Z,2021-05-01T22:40:48Z,2-39-125-21\n")
	f.Add("charger,start,end\nc,2021-05-01T21:56:16+02:00,2021-05-01T22:40:48Z\n")
	f.Add("start,end\n")
	f.Fuzz(func(t *testing.T, in string) {
		ss, err := ReadSessions(strings.NewReader(in), "fuzz")
		if err != nil {
			return
		}
		for _, s := range ss {
			if !s.End.After(s.Start) || s.Charger == "" {
				t.Fatalf("accepted a bad session %+v", s)
			}
		}
	})
}

func TestWriteObs(t *testing.T) {
	tb := &Table{Sites: []Site{{Name: "a", Pool: 1}}, Origin: t0, Width: 5 * time.Minute, Cells: [][]Cell{
		{{Served: 1, Supply: 2}},
		{{Served: 1, Supply: 1, Censored: true}},
		{{Served: 0, Supply: 0, Censored: true}},
		{{Served: 0, Supply: 1}},
	}}
	var b bytes.Buffer
	if err := tb.WriteObs(&b); err != nil {
		t.Fatal(err)
	}
	want := "time,product,demand,supply,censored\n" +
		"2024-05-06T08:00:00Z,a,1,2,0\n" +
		"2024-05-06T08:05:00Z,a,1,1,1\n" +
		"2024-05-06T08:10:00Z,a,,0,0\n" +
		"2024-05-06T08:15:00Z,a,0,1,0\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
