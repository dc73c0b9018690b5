// Package wire is the format of dcgpd's messages: the input (ObsMessage,
// with its checks and rejections), the estimates (LatentMessage), the
// rejections and the headers on the wire, their JSON codecs (a fast path
// for the common shapes, encoding/json for the rest, both fuzzed), and
// the largest estimate message a model can publish (MaxLatentBytes).
// It imports no other package of dcgpd.
package wire
