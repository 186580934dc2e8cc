//go:build !pprofreceiver

package main

import "go.opentelemetry.io/collector/receiver"

// extraReceivers is empty unless built with -tags pprofreceiver (see
// pprofreceiver.go): the contrib pprof receiver is not on the Go module proxy.
func extraReceivers() []receiver.Factory { return nil }
