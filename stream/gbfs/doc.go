// Package gbfs reads a bike-share system's public GBFS feeds (General
// Bikeshare Feed Specification, versions 2.3 and 3.0) and turns each
// station_status snapshot into dcgpd station status messages.
//
// The decoders (DecodeDiscovery, DecodeStationInformation,
// DecodeStationStatus) accept both versions' shapes: the auto-discovery
// file's per-language feed lists (2.3) or single list (3.0); station names
// as a string (2.3) or localized array (3.0); num_bikes_* (2.3) or
// num_vehicles_* (3.0); timestamps as POSIX seconds (2.3) or RFC 3339
// strings (3.0). A malformed file is an error; a malformed station inside
// a good file is reported on its own and the other stations are kept.
//
// A Poller fetches gbfs.json, station_information and station_status at
// the feeds' ttl (bounded by MinInterval and MaxInterval), checks each
// snapshot (stale last_updated, stale last_reported, counts above the
// capacity, stations listed twice, stations absent from
// station_information, stations that vanish, stations out of service) and
// publishes the good samples through a Publisher as stationstatus
// messages. Each problem is logged and counted by reason; the rest keeps
// flowing.
//
// Hostile feeds: a station_id listed more than once is refused in every
// copy (ErrDuplicateStation). A station absent from station_information
// is skipped unless Config.PublishUninformed. A last_updated more than
// Config.MaxClockSkew ahead of the poller's clock is published stamped at
// the poller's clock, so that it does not make later snapshots look
// older. After a failed poll the wait doubles from MinInterval (jittered,
// WithJitter) up to Config.MaxBackoff, or is the server's Retry-After if
// longer (seconds or HTTP date, at most MaxBackoff). A status message the
// daemon does not store (no stream for the subject: dcgpd serve not
// running) is a PublishError, not a feed error; the snapshot stays
// pending until stored. A condition that lasts (failing feed, failing
// publish, clock ahead, the same stations skipped) is logged when it
// starts, at most once per Config.WarnInterval while it lasts, and when
// it ends; every occurrence is counted.
package gbfs
