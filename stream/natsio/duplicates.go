package natsio

import (
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ExpectDuplicates sets when the server may rightly report an output as
// a duplicate of one it stored within its duplicate window: expected
// says so for an output about to be published on subject (a runner
// replaying input its predecessor already processed re-publishes the
// same estimates under the same ids). An output sent again after an
// unconfirmed attempt is always expected to be one. Call it before the
// first Publish.
func (s *Publisher) ExpectDuplicates(expected func(subject string) bool) { s.expectDup = expected }

// Duplicates counts the outputs the server reported as duplicates (not
// stored again): expected ones and the others, which mean an output
// reused the id of another (two instances on one model, or a replay that
// is not identical), each logged as a warning.
func (s *Publisher) Duplicates() (expected, unexpected int64) {
	return s.dupExpected.Load(), s.dupUnexpected.Load()
}

// checkDuplicate counts an acknowledged output the server reports as a
// duplicate.
func (s *Publisher) checkDuplicate(p pendingPub, ack *jetstream.PubAck) {
	if ack == nil || !ack.Duplicate {
		return
	}
	if p.dupExpected {
		s.dupExpected.Add(1)
		return
	}
	s.dupUnexpected.Add(1)
	if n, ok := s.dupLimit.Allow(); ok {
		var subject, id string
		if m := p.fut.Msg(); m != nil {
			subject, id = m.Subject, m.Header.Get(nats.MsgIdHdr)
		}
		s.log.Warn().Str("subject", subject).Str("id", id).Str("stream", ack.Stream).Int("suppressed", n).
			Msg("output dropped by the server as a duplicate of one it already holds, where none was expected: another process publishes the same model's outputs, or the same id now carries other estimates")
	}
}
