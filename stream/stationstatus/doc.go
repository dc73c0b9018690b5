// Package stationstatus is the station status message: a snapshot of
// bike-share stations' inventory (bikes and docks available, disabled
// counts, whether each station is installed, renting and returning, and
// when it last reported), as published on <prefix>.status.<feed> by
// `dcgpd gbfs` or by any other producer, and read by the daemon. It holds
// the schema, a strict decoder that names what is wrong with a refused
// message, and the encoder.
package stationstatus
