// Package stationstatus is the station status message: a snapshot of
// bike-share stations' inventory (bikes and docks available, disabled
// counts, whether each station is installed, renting and returning, and
// when it last reported), as published on <prefix>.status.<feed> by
// `dcgpd gbfs` or by any other producer, and read by the daemon. It holds
// the schema, a strict decoder that names what is wrong with a refused
// message, and the encoder.
//
// A sample's name (the station's name for people, from GBFS
// station_information) is optional: a message without it decodes as
// before. A daemon older than the field refuses a message that carries
// it (unknown field), so upgrade the daemon before the producer.
package stationstatus
