// Package stream connects dcgpd models to the outside world: NATS ingest of
// per-bin demand and supply, bin assembly, and publication of latent-demand
// estimates. The batch CSV formats shared by `dcgpd fit` and `dcgpd replay`
// live in the csvio subpackage.
package stream
