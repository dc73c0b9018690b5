//go:build !faultinject

package main

import "github.com/dcgpd/dcgpd/config"

// faultsFromEnv is the release binary's: no fault injection, whatever the
// environment says (faults_on.go is the test build's, -tags faultinject).
func faultsFromEnv() (config.Faults, error) { return config.Faults{}, nil }
