package gbfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// FeedError is a GBFS file that could not be used this poll: Reason is a
// short stable label (a metrics label value).
type FeedError struct {
	File, Reason string
	Err          error
	// RetryAfter is the server's Retry-After (0 when not given).
	RetryAfter time.Duration
}

func (e *FeedError) Error() string { return e.File + ": " + e.Err.Error() }

func (e *FeedError) Unwrap() error { return e.Err }

// Feed error reasons.
const (
	ReasonHTTPStatus = "http_status" // a status other than 200
	ReasonTimeout    = "timeout"     // no complete answer within Timeout
	ReasonFetch      = "fetch"       // connection refused, DNS, TLS, ...
	ReasonTooLarge   = "too_large"   // body over MaxBodyBytes
	ReasonMalformed  = "malformed"   // not a GBFS file of the expected kind
	ReasonStaleFeed  = "stale_feed"  // last_updated too old or going back
)

// fetch gets one file within the timeout, refusing bodies over limit.
func (p *Poller) fetch(ctx context.Context, file, url string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, &FeedError{File: file, Reason: ReasonFetch, Err: err}
	}
	req.Header.Set("User-Agent", "dcgpd-gbfs")
	req.Header.Set("Accept", "application/json")
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, classify(ctx, file, url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		fe := &FeedError{File: file, Reason: ReasonHTTPStatus, Err: fmt.Errorf("GET %s: HTTP %s", url, resp.Status)}
		if d, ok := retryAfter(resp.Header.Get("Retry-After"), p.now()); ok {
			fe.RetryAfter = d
			fe.Err = fmt.Errorf("GET %s: HTTP %s (Retry-After %v)", url, resp.Status, d)
		}
		return nil, fe
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, p.cfg.MaxBodyBytes+1))
	if err != nil {
		return nil, classify(ctx, file, url, err)
	}
	if int64(len(body)) > p.cfg.MaxBodyBytes {
		return nil, &FeedError{File: file, Reason: ReasonTooLarge, Err: fmt.Errorf("GET %s: body over %d bytes", url, p.cfg.MaxBodyBytes)}
	}
	return body, nil
}

// classify names a transport error: a timeout (the request's deadline)
// apart from every other failure.
func classify(ctx context.Context, file, url string, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return &FeedError{File: file, Reason: ReasonTimeout, Err: fmt.Errorf("GET %s: no answer within the timeout: %w", url, err)}
	}
	return &FeedError{File: file, Reason: ReasonFetch, Err: fmt.Errorf("GET %s: %w", url, err)}
}
