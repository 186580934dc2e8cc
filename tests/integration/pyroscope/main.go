// SPDX-License-Identifier: Apache-2.0
// The real Pyroscope Go SDK (github.com/grafana/pyroscope-go v1.5.0) as a
// client of pprofgate's pyroscope receiver in tests/integration/
// test_pyroscope_sdk.py: CPU and the four heap types, with tags and
// pprof.Do labels, pushed to the address in argv[1] for argv[2] seconds.
// Function names the test looks for: pgPyroBurn, pgPyroAlloc.
package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime/pprof"
	"strconv"
	"time"

	pyroscope "github.com/grafana/pyroscope-go"
)

var sink []byte
var keep [][]byte

//go:noinline
func pgPyroBurn(d time.Duration) float64 {
	end := time.Now().Add(d)
	x := 0.0
	for time.Now().Before(end) {
		for i := 0; i < 10000; i++ {
			x += math.Sqrt(x + float64(i))
		}
	}
	return x
}

//go:noinline
func pgPyroAlloc() {
	for i := 0; i < 200; i++ {
		sink = make([]byte, 4096+i)
	}
	keep = append(keep, make([]byte, 1<<16))
	if len(keep) > 64 {
		keep = keep[1:]
	}
}

type logger struct{}

func (logger) Infof(f string, a ...interface{})  {}
func (logger) Debugf(f string, a ...interface{}) {}
func (logger) Errorf(f string, a ...interface{}) { fmt.Fprintf(os.Stderr, "pyroscope error: "+f+"\n", a...) }

func main() {
	secs, _ := strconv.Atoi(os.Args[2])
	p, err := pyroscope.Start(pyroscope.Config{
		ApplicationName: "pyro.checkout",
		ServerAddress:   os.Args[1],
		Tags:            map[string]string{"env": "prod", "region": "eu-1"},
		TenantID:        "tenant-7",
		UploadRate:      time.Second,
		Logger:          logger{},
		ProfileTypes: []pyroscope.ProfileType{
			pyroscope.ProfileCPU,
			pyroscope.ProfileAllocObjects, pyroscope.ProfileAllocSpace,
			pyroscope.ProfileInuseObjects, pyroscope.ProfileInuseSpace,
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start:", err)
		os.Exit(2)
	}
	end := time.Now().Add(time.Duration(secs) * time.Second)
	for time.Now().Before(end) {
		pprof.Do(context.Background(), pprof.Labels("endpoint", "/pay"), func(context.Context) {
			pgPyroBurn(30 * time.Millisecond)
			pgPyroAlloc()
		})
		time.Sleep(5 * time.Millisecond)
	}
	if err := p.Stop(); err != nil { // flushes the last profiles
		fmt.Fprintln(os.Stderr, "stop:", err)
		os.Exit(3)
	}
	fmt.Println("client done")
}
