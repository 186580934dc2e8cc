// SPDX-License-Identifier: Apache-2.0
// A Go program serving net/http/pprof for pprofgate's scrape tests: CPU work
// under pprof.Do labels, a retained heap, and a few misbehaving endpoints
// (HTML, an oversized body, a gzip bomb, a hang, a body cut short). Prints
// its port.
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	rpprof "runtime/pprof"
	"strings"
	"time"
)

var retained [][]byte

func burn(ctx context.Context) {
	buf := make([]byte, 4096)
	for {
		select {
		case <-ctx.Done():
			return
		default:
		}
		for i := 0; i < 200; i++ {
			sha256.Sum256(buf)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func main() {
	writeTimeout := flag.Duration("write-timeout", 60*time.Second, "server WriteTimeout")
	flag.Parse()
	runtime.MemProfileRate = 4096
	for i := 0; i < 2000; i++ {
		retained = append(retained, make([]byte, 1024+i))
	}
	go rpprof.Do(context.Background(), rpprof.Labels("worker", "hasher"), func(ctx context.Context) {
		burn(ctx)
	})
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body>not a profile</body></html>")
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("x", 65536))
		for i := 0; i < 64; i++ { // 4 MiB
			w.Write(chunk)
		}
	})
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	zero := make([]byte, 1<<20)
	for i := 0; i < 64; i++ { // 64 MiB of zeros in ~64 KiB
		zw.Write(zero)
	}
	zw.Close()
	mux.HandleFunc("/bomb", func(w http.ResponseWriter, r *http.Request) {
		w.Write(bomb.Bytes())
	})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
	})
	mux.HandleFunc("/cut", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100000")
		w.Write([]byte(strings.Repeat("y", 1000)))
		if hj, ok := w.(http.Hijacker); ok {
			c, _, err := hj.Hijack()
			if err == nil {
				c.Close()
			}
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("listening on %d\n", ln.Addr().(*net.TCPAddr).Port)
	os.Stdout.Sync()
	srv := &http.Server{Handler: mux, WriteTimeout: *writeTimeout}
	srv.Serve(ln)
}
