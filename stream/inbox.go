package stream

import (
	"context"
	"sync"
)

// inbox is a model's input queue. The consumer's callback appends one
// message at a time; the runner takes everything queued in one step, so
// a backlog costs one wake-up per batch rather than a channel operation
// per message.
type inbox struct {
	mu    sync.Mutex
	items []input
	max   int
	// ready holds a signal while items is non-empty; space one after the
	// runner took a batch (for a producer waiting on a full queue).
	ready chan struct{}
	space chan struct{}
}

func newInbox(max int) *inbox {
	return &inbox{items: make([]input, 0, max), max: max, ready: make(chan struct{}, 1), space: make(chan struct{}, 1)}
}

// put queues in, waiting while the queue is full (back-pressure on the
// consumer) or until ctx ends.
func (q *inbox) put(ctx context.Context, in input) error {
	for {
		q.mu.Lock()
		if len(q.items) < q.max {
			q.items = append(q.items, in)
			first := len(q.items) == 1
			q.mu.Unlock()
			if first {
				signal(q.ready)
			}
			return nil
		}
		q.mu.Unlock()
		select {
		case <-q.space:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// take returns everything queued and leaves spare (emptied) as the queue.
func (q *inbox) take(spare []input) []input {
	clear(spare)
	q.mu.Lock()
	items := q.items
	q.items = spare[:0]
	q.mu.Unlock()
	signal(q.space)
	return items
}

// signal sends on a channel of capacity 1 unless a signal is pending.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
