package main

// collectorVersion is the collector release every module in go.mod is pinned
// at; build.sh checks that go.mod agrees.
const collectorVersion = "0.161.0"
