package jsstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/dcgpd/dcgpd/snapshot"
)

// Reads on replicated buckets. nats.go reads a key-value entry and an
// object's metadata with direct gets, which any replica answers, and an
// object's chunks through an R1 ordered consumer placed on any replica;
// a replica still applying the last writes answers with an older pointer
// (or none) and delivers only the chunks it has (the object then fails
// nats.go's digest check). So the pointer is read from the stream leader,
// which has applied every acknowledged write, and an object the pointer
// names but a replica could not give whole is read again a few times.

// Object read retries: the backoff doubles from objectRetryFirst up to
// objectRetryMax, for objectReadAttempts reads in all (about 3.6 s).
const (
	objectReadAttempts = 10
	objectRetryFirst   = 20 * time.Millisecond
	objectRetryMax     = 500 * time.Millisecond
)

// jsNoMessageFound is the JetStream API error code for a message get
// that found nothing.
const jsNoMessageFound = 10037

// pointer reads a model's pointer and its revision (0: none yet) from the
// leader of the pointer bucket's stream.
func (s *Store) pointer(ctx context.Context, name string) (jsPointer, uint64, error) {
	var p jsPointer
	val, rev, err := s.leaderGet(ctx, name)
	if err != nil {
		return p, 0, fmt.Errorf("snapshot pointer of %s: %w", name, err)
	}
	if rev == 0 {
		return p, 0, nil
	}
	p, err = decodePointer(val)
	if err != nil {
		return p, 0, fmt.Errorf("snapshot pointer of %s: %w", name, err)
	}
	return p, rev, nil
}

// leaderGet returns the last value of key in the pointer bucket and its
// revision (0 when there is none or it was deleted), asking the stream
// leader through the JetStream API's message get rather than a direct get.
func (s *Store) leaderGet(ctx context.Context, key string) ([]byte, uint64, error) {
	if !validPointerKey(key) {
		return nil, 0, fmt.Errorf("%w: %q", jetstream.ErrInvalidKey, key)
	}
	req, _ := json.Marshal(struct {
		LastBySubject string `json:"last_by_subj"`
	}{"$KV." + snapPointerBucket + "." + key})
	subj := s.apiPrefix + "STREAM.MSG.GET.KV_" + snapPointerBucket
	m, err := s.js.Conn().RequestWithContext(ctx, subj, req)
	if err != nil {
		return nil, 0, fmt.Errorf("message get on %s: %w", subj, err)
	}
	val, rev, err := decodeMsgGetReply(m.Data)
	if err != nil {
		return nil, 0, fmt.Errorf("message get on %s: %w", subj, err)
	}
	return val, rev, nil
}

// decodeMsgGetReply parses the reply to a JetStream API message get of a
// key-value entry: its value and sequence (the revision), or 0 when there
// is no entry or the last one is a delete or purge marker.
func decodeMsgGetReply(b []byte) ([]byte, uint64, error) {
	var resp struct {
		Message *struct {
			Sequence uint64 `json:"seq"`
			Header   []byte `json:"hdrs"`
			Data     []byte `json:"data"`
		} `json:"message"`
		Error *struct {
			Code        int    `json:"code"`
			ErrCode     int    `json:"err_code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		return nil, 0, fmt.Errorf("reply %.200q: %w", b, err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrCode == jsNoMessageFound:
		return nil, 0, nil
	case resp.Error != nil:
		return nil, 0, fmt.Errorf("%s (code %d, error code %d)", resp.Error.Description, resp.Error.Code, resp.Error.ErrCode)
	case resp.Message == nil || resp.Message.Sequence == 0:
		return nil, 0, fmt.Errorf("reply %.200q has no message with a sequence", b)
	}
	if len(resp.Message.Header) > 0 {
		h, err := nats.DecodeHeadersMsg(resp.Message.Header)
		if err != nil {
			return nil, 0, fmt.Errorf("headers: %w", err)
		}
		if op := h.Get("KV-Operation"); op == "DEL" || op == "PURGE" {
			return nil, 0, nil
		}
	}
	return resp.Message.Data, resp.Message.Sequence, nil
}

// validPointerKey reports whether key is a valid key-value key (the
// rules of nats.go): it becomes a subject, so no wildcard may slip in.
func validPointerKey(key string) bool {
	if key == "" || strings.HasPrefix(key, ".") || strings.HasSuffix(key, ".") {
		return false
	}
	for _, c := range key {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-/_=.", c)
		if !ok {
			return false
		}
	}
	return true
}

// apiPrefixOf is the subject prefix of js's API requests, ending in a dot.
func apiPrefixOf(js jetstream.JetStream) string {
	o := js.Options()
	switch {
	case o.Domain != "":
		return "$JS." + o.Domain + ".API."
	case o.APIPrefix != "":
		return strings.TrimSuffix(o.APIPrefix, ".") + "."
	}
	return jetstream.DefaultAPIPrefix
}

// readObject reads the object o that model's generation g names and checks
// it against the pointer. An object missing or failing nats.go's digest
// check is read again with backoff, since a replica still catching up
// gives either, and so is a read no server answered (as while a new
// stream leader is announced). After objectReadAttempts reads the error
// wraps the last one and, unless no server ever answered,
// snapshot.ErrCorrupt. Bytes that arrive whole but
// differ from the pointer's size or SHA-256 are corrupt at once: a replica
// lagging cannot produce them, as object names are never reused.
func (s *Store) readObject(ctx context.Context, model string, g snapshot.Generation, o *jsObject) ([]byte, error) {
	start := time.Now()
	wait := objectRetryFirst
	var b []byte
	var err error
	for attempt := 1; ; attempt++ {
		b, err = s.obj.GetBytes(ctx, o.Name)
		transient := errors.Is(err, jetstream.ErrObjectNotFound) || errors.Is(err, jetstream.ErrDigestMismatch) ||
			errors.Is(err, nats.ErrNoResponders)
		if !transient {
			break
		}
		if attempt == objectReadAttempts {
			err = fmt.Errorf("snapshot %s %s, object %s: %d reads over %v all failed, the last with: %w",
				model, g, o.Name, attempt, time.Since(start).Round(time.Millisecond), err)
			if errors.Is(err, nats.ErrNoResponders) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %w", snapshot.ErrCorrupt, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("snapshot %s %s, object %s: %v, and no time left to read it again: %w",
				model, g, o.Name, err, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, objectRetryMax)
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot %s %s, object %s: %w", model, g, o.Name, err)
	}
	if sum := sha256.Sum256(b); len(b) != o.Size || hex.EncodeToString(sum[:]) != o.SHA256 {
		return nil, fmt.Errorf("%w: snapshot %s %s, object %s holds %d bytes of SHA-256 %x, the pointer says %d bytes of %s",
			snapshot.ErrCorrupt, model, g, o.Name, len(b), sum, o.Size, o.SHA256)
	}
	return b, nil
}
