// SPDX-License-Identifier: Apache-2.0

// pg-v19peer reads OTLP Profiles requests the way a Collector v0.147.0 does:
// with go.opentelemetry.io/collector/pdata v1.53.0 (OTLP v1.9.0), the last
// pdata before v1.10 renumbered Sample fields. It is the real peer of
// pprofgate's `protocol_version: v1.9` (tests/integration/test_otlp_protocol_version.py).
// For each file named on the command line (one ExportProfilesServiceRequest,
// which has ProfilesData's fields) it prints one JSON line: the samples as
// pdata read them ([stack_index, values, attribute_indices, link_index] and
// the attributes resolved through the dictionary), or the error pdata
// returned. Exit 0 either way; 2 on bad usage.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"go.opentelemetry.io/collector/pdata/pprofile"
)

type sample struct {
	Stack int32    `json:"stack"`
	Vals  []int64  `json:"values"`
	Attrs []int32  `json:"attribute_indices"`
	Link  int32    `json:"link"`
	KVs   []string `json:"attributes"`
}

type result struct {
	File    string   `json:"file"`
	Error   string   `json:"error,omitempty"`
	Samples []sample `json:"samples"`
}

func read(path string) result {
	r := result{File: path, Samples: []sample{}}
	b, err := os.ReadFile(path)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	var u pprofile.ProtoUnmarshaler
	p, err := u.UnmarshalProfiles(b)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	dict := p.Dictionary()
	strs := dict.StringTable()
	attrs := dict.AttributeTable()
	for i := 0; i < p.ResourceProfiles().Len(); i++ {
		sps := p.ResourceProfiles().At(i).ScopeProfiles()
		for j := 0; j < sps.Len(); j++ {
			ps := sps.At(j).Profiles()
			for k := 0; k < ps.Len(); k++ {
				ss := ps.At(k).Samples()
				for n := 0; n < ss.Len(); n++ {
					s := ss.At(n)
					out := sample{Stack: s.StackIndex(), Vals: s.Values().AsRaw(),
						Attrs: s.AttributeIndices().AsRaw(), Link: s.LinkIndex(), KVs: []string{}}
					for _, a := range out.Attrs {
						if int(a) >= attrs.Len() {
							out.KVs = append(out.KVs, fmt.Sprintf("#%d?", a))
							continue
						}
						kv := attrs.At(int(a))
						key := ""
						if int(kv.KeyStrindex()) < strs.Len() {
							key = strs.At(int(kv.KeyStrindex()))
						}
						out.KVs = append(out.KVs, key+"="+kv.Value().AsString())
					}
					r.Samples = append(r.Samples, out)
				}
			}
		}
	}
	return r
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: pg-v19peer REQUEST.pb...")
		os.Exit(2)
	}
	enc := json.NewEncoder(os.Stdout)
	for _, f := range os.Args[1:] {
		if err := enc.Encode(read(f)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
