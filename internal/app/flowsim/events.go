package flowsim

import (
	"container/heap"
	"math/rand/v2"
	"time"
)

// Event kinds.
const (
	pickup = iota
	ret
	truckStart
	truckOut
	truckIn
)

type event struct {
	at   time.Duration // since the world's start
	kind int
}

// queue is a min-heap of events by time.
type queue []event

func (q queue) Len() int           { return len(q) }
func (q queue) Less(i, j int) bool { return q[i].at < q[j].at }
func (q queue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)        { *q = append(*q, x.(event)) }
func (q *queue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// interleave pushes p pickups and d returns at independent uniform times
// within [from, from+span): given the counts, the arrival times of a
// Poisson process. The order of the times is a uniformly random
// interleaving, the law of the decision backtest's eventOrder; the times
// themselves are what polling needs.
func interleave(q *queue, r *rand.Rand, from, span time.Duration, p, d int) {
	for i := range p + d {
		kind := ret
		if i < p {
			kind = pickup
		}
		heap.Push(q, event{at: from + time.Duration(r.Int64N(int64(span))), kind: kind})
	}
}
