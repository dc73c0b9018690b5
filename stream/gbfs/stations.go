package gbfs

import (
	"context"
	"errors"
)

// ErrNoStationInformation: the system's gbfs.json lists no
// station_information feed.
var ErrNoStationInformation = errors.New("gbfs.json lists no station_information feed")

// Stations reads the system's gbfs.json and station_information once (a
// daemon building its models from the feed's stations at start) and
// returns the stations that could be read; Problems lists the others.
// It shares nothing with Run: call it before Run, not beside it.
func (p *Poller) Stations(ctx context.Context) (StationInformation, error) {
	d, err := p.discover(ctx)
	if err != nil {
		return StationInformation{}, err
	}
	infoURL := d.Feeds[FeedStationInformation]
	if infoURL == "" {
		return StationInformation{}, &FeedError{File: "gbfs", Reason: ReasonMalformed, Err: ErrNoStationInformation}
	}
	body, err := p.fetch(ctx, FeedStationInformation, infoURL)
	if err != nil {
		return StationInformation{}, err
	}
	si, err := DecodeStationInformation(body, p.cfg.Language)
	if err != nil {
		return StationInformation{}, &FeedError{File: FeedStationInformation, Reason: ReasonMalformed, Err: err}
	}
	return si, nil
}

// SetPublisher replaces the poller's publisher (a daemon that reads the
// stations with Stations before its streams exist); call it before Run.
func (p *Poller) SetPublisher(pub Publisher) { p.pub = pub }
