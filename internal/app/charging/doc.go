// Package charging turns EV charging records into the per-bin demand and
// supply dcgpd reads, under a stated site protocol.
//
// Session records (start, end, charger) show only the drivers who got a
// charger. To study censoring on them the chargers are grouped into sites
// (Network), each site keeps a smaller pool of chargers than it has, and
// the recorded arrivals are replayed in time order through Simulate:
//
//   - an arrival at site s finds a free charger among the pool of s: it
//     is served there for its recorded duration;
//   - else it is turned away; with probability Protocol.Divert it drives
//     on to one other site j, chosen with weight exp(−d²_sj/(2ℓ²)) (the
//     diffusion model's graph), arriving in the same instant: served there
//     if j has a free charger, lost otherwise; with probability 1 − Divert
//     it is lost at once. Nobody tries a third site.
//
// The recorded arrivals are the truth (the demand f of each site); the
// served starts are what an operator would see. Bins aggregates the
// outcome per site and bin: arrivals (truth), served starts (observed
// demand), supply and the censoring flag, the part of the bin the site
// was full, its mean occupancy, and the arrivals turned away with where
// they went (each other site, lost). A bin is censored when the site had
// no free charger at some moment in it, which an operator sees from
// charger status alone; its supply is then the served count (the demand
// was at least that). An uncensored bin's supply is the number of
// arrivals the site could have served: chargers free at its start plus
// those freed during it. A full bin with nobody served is written as no
// observation with supply 0 (Cell.Observation says why).
//
// Simulated sessions of the same shape (Synthesize) stand in for the real
// records where those may not be shipped.
package charging
