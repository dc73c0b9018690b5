// Package ocpi reads charger status from an OCPI 2.2.1 `locations`
// endpoint (the interface charge-point operators publish to roaming
// partners and, under the EU's AFIR rules, to the public) and publishes
// each EVSE's status as it changes.
//
// Decode parses one page of the endpoint: the OCPI response envelope
// (`data`, `status_code`, `status_message`, `timestamp`) around an array of
// Locations, each with its EVSEs' `uid`, `status` and `last_updated`. An
// envelope that is not JSON or whose status_code is not 1000 (success)
// refuses the whole page; an EVSE with no uid, an unknown status or a
// stale last_updated is refused alone, with a Problem naming it, and the
// page's other EVSEs are kept.
//
// A Poller fetches every page of the endpoint on an interval (the OCPI
// token in the `Authorization: Token …` header; pagination by the `Link:
// <…>; rel="next"` header, checked against `X-Total-Count`), and hands
// a Publisher each successful poll's Batch: the statuses that changed
// since the last poll, the unchanged ones due for a refresh, and the
// poll's time (the NATS publisher sends it last, as a poll marker:
// DecodeMessage reads both kinds back). Every
// failure (transport, timeout, HTTP status, malformed body, OCPI error,
// a short pagination) is logged and counted by reason and the poller goes
// on at the next interval; statuses already accepted are not lost: a
// failed poll publishes nothing and the next one compares with what was
// last published. SupplyFromStatus turns the published statuses
// into a site's supply and censoring per bin; package evsupply does it in
// the daemon.
package ocpi
