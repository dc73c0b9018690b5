// Package config is the configuration of `dcgpd serve`: the TOML file
// (config.toml documents every key), its defaults (DefaultConfig,
// DefaultModelConfig) and its checks (Validate), whose errors name the
// file's line and key. A model's own tables may come from a model file
// written by `dcgpd fit --save-model` (LoadConfig reads it).
//
// It imports the model specification (cvi/spec) and nothing of NATS,
// HTTP, snapshots or the runner; every serving package reads it.
package config
