package rebalance

import (
	"context"
	"sync"
	"sync/atomic"
)

// share runs do(wk, i) once for every i in 0..n-1 on the Risker's
// workers, at most one goroutine per worker. Each worker takes the next
// index nobody has taken (one shared counter), so a slow station holds
// up no other worker's share; do must write only what belongs to index
// i, so the result does not depend on which worker took which index or
// on the number of workers.
//
// The goroutines belong to the call: share returns once every one has
// stopped, after the last index or, when ctx ends, after the index each
// was on. It returns how many indices were done (n unless ctx ended
// first).
func (r *Risker) share(ctx context.Context, n int, do func(wk *worker, i int)) int {
	var next, done atomic.Int64
	stop := ctx.Done()
	var wg sync.WaitGroup
	for _, wk := range r.workers[:min(len(r.workers), n)] {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				do(wk, i)
				done.Add(1)
			}
		})
	}
	wg.Wait()
	return int(done.Load())
}
