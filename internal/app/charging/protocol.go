package charging

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Protocol is what a driver does who finds a site full.
type Protocol struct {
	// Divert is the probability that a turned-away driver tries one
	// other site; 1 − Divert of them give up at once (the sink).
	Divert float64
	// Lengthscale ℓ in metres weighs the other sites: exp(−d²/(2ℓ²)).
	Lengthscale float64
	// Seed fixes the drivers' choices.
	Seed uint64
}

// Validate checks the protocol's values.
func (p Protocol) Validate() error {
	if !(p.Divert >= 0 && p.Divert <= 1) {
		return fmt.Errorf("charging: divert probability %v not in [0, 1]", p.Divert)
	}
	if !(p.Lengthscale > 0) || math.IsInf(p.Lengthscale, 0) {
		return fmt.Errorf("charging: lengthscale %v must be positive and finite", p.Lengthscale)
	}
	return nil
}

// Arrival is one recorded arrival and what became of it.
type Arrival struct {
	Time     time.Time
	Duration time.Duration
	// Site is where the driver came (the charger's site); ServedAt where
	// it charged, −1 if lost; Tried the other site it drove on to, −1 if
	// it was served at once or gave up at once.
	Site, ServedAt, Tried int
}

// TurnedAway reports whether the driver found its own site full.
func (a Arrival) TurnedAway() bool { return a.ServedAt != a.Site }

// Outcome is the result of replaying sessions through a network.
type Outcome struct {
	Network  *Network
	Arrivals []Arrival
}

// Simulate replays the sessions' arrivals, in order of start, through
// the network's pools under protocol p (see the package comment). A
// session whose charger the network does not know is an error.
func Simulate(ss []Session, n *Network, p Protocol) (*Outcome, error) {
	if err := n.Validate(); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	choice := n.Choice(p.Lengthscale)
	rng := rand.New(rand.NewPCG(p.Seed, 0x65762d73697465))
	busy := make([]endHeap, len(n.Sites))
	out := &Outcome{Network: n, Arrivals: make([]Arrival, 0, len(ss))}
	var last time.Time
	for i, s := range ss {
		site, ok := n.SiteOf[s.Charger]
		if !ok {
			return nil, fmt.Errorf("charging: session %d: charger %q belongs to no site", i, s.Charger)
		}
		if s.Start.Before(last) {
			return nil, fmt.Errorf("charging: session %d starts at %s, before the one before it: sort the sessions by start", i, s.Start.Format(time.RFC3339))
		}
		last = s.Start
		a := Arrival{Time: s.Start, Duration: s.End.Sub(s.Start), Site: site, ServedAt: -1, Tried: -1}
		if busy[site].admit(s.Start, s.End, n.Sites[site].Pool) {
			a.ServedAt = site
		} else if rng.Float64() < p.Divert {
			if j := pick(rng, choice[site]); j >= 0 {
				a.Tried = j
				if busy[j].admit(s.Start, s.End, n.Sites[j].Pool) {
					a.ServedAt = j
				}
			}
		}
		out.Arrivals = append(out.Arrivals, a)
	}
	return out, nil
}

// pick draws an index from the probabilities w (−1 when they are all 0).
func pick(rng *rand.Rand, w []float64) int {
	u := rng.Float64()
	last := -1
	for j, p := range w {
		if p <= 0 {
			continue
		}
		last = j
		if u < p {
			return j
		}
		u -= p
	}
	return last
}

// endHeap holds the end times of a site's sessions in progress.
type endHeap []time.Time

func (h endHeap) Len() int           { return len(h) }
func (h endHeap) Less(i, j int) bool { return h[i].Before(h[j]) }
func (h endHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *endHeap) Push(x any)        { *h = append(*h, x.(time.Time)) }
func (h *endHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// admit releases the sessions ended by t and takes a charger until end
// if one of pool is free.
func (h *endHeap) admit(t, end time.Time, pool int) bool {
	for h.Len() > 0 && !(*h)[0].After(t) {
		heap.Pop(h)
	}
	if h.Len() >= pool {
		return false
	}
	heap.Push(h, end)
	return true
}
