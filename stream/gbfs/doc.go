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
// capacity, stations that vanish, stations out of service) and publishes
// the good samples through a Publisher as stationstatus messages. Each
// problem is logged and counted by reason; the rest keeps flowing.
package gbfs
