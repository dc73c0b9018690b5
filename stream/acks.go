package stream

import "time"

// ackQueue holds the handles of applied input messages not yet
// acknowledged, in sequence order. The consumer acknowledges all
// (AckAll): acknowledging one message settles every earlier one, so a
// whole prefix costs one acknowledgement.
type ackQueue struct {
	seqs []uint64
	acks []Acker
	head int
	// reqs are acknowledgements waiting for outputs to be stored.
	reqs []ackRequest
}

// ackRequest: acknowledge up to seq once `stored` outputs are stored.
type ackRequest struct {
	seq    uint64
	stored int64
}

func (q *ackQueue) push(seq uint64, a Acker) {
	q.seqs = append(q.seqs, seq)
	q.acks = append(q.acks, a)
}

func (q *ackQueue) len() int { return len(q.seqs) - q.head }

// upTo acknowledges the newest held message at or below seq (and with it
// every earlier one) and drops them.
func (q *ackQueue) upTo(seq uint64) {
	var last Acker
	for q.head < len(q.seqs) && q.seqs[q.head] <= seq {
		last = q.acks[q.head]
		q.acks[q.head] = nil
		q.head++
	}
	if last != nil {
		_ = last.Ack()
	}
	if q.head > 1024 && q.head*2 > len(q.seqs) {
		n := copy(q.seqs, q.seqs[q.head:])
		copy(q.acks, q.acks[q.head:])
		clear(q.acks[n:])
		q.seqs, q.acks, q.head = q.seqs[:n], q.acks[:n], 0
	}
}

// frontier is the highest input sequence every message up to which is
// settled: in a processed bin, refused, a duplicate or a watermark —
// none waits in an open bin.
func (r *Runner) frontier() uint64 {
	if o := r.asm.OldestOpenSeq(); o != 0 && o-1 < r.applied {
		return o - 1
	}
	return r.applied
}

// ackWhenStored acknowledges up to seq once the first `stored` outputs
// are stored by the server (in flushAcks).
func (r *Runner) ackWhenStored(seq uint64, stored int64) {
	q := &r.acks
	if n := len(q.reqs); n > 0 && q.reqs[n-1].seq >= seq {
		return
	}
	q.reqs = append(q.reqs, ackRequest{seq: seq, stored: stored})
	r.flushAcks()
}

// flushAcks carries out the acknowledgement requests whose outputs are
// stored.
func (r *Runner) flushAcks() {
	q := &r.acks
	done := r.confirmed.Load()
	i := 0
	for i < len(q.reqs) && q.reqs[i].stored <= done {
		i++
	}
	if i == 0 {
		return
	}
	q.upTo(q.reqs[i-1].seq)
	q.reqs = append(q.reqs[:0], q.reqs[i:]...)
}

// waitStored waits until every published output is stored, at most d.
func (r *Runner) waitStored(d time.Duration) bool {
	if r.confirmed.Load() >= r.published {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	for r.confirmed.Load() < r.published {
		select {
		case <-r.confirmCh:
		case <-t.C:
			return r.confirmed.Load() >= r.published
		}
	}
	return true
}
