# SPDX-License-Identifier: Apache-2.0
"""Canonical, index-free views of a pprof profile and of an OTLP Profiles
request in the collector's JSON (fileexporter / pdata JSON), so the two can be
compared sample by sample whatever the dictionary indexes are (stdlib only).

A profile becomes {"sample_type": (type, unit), "period_type", "period",
"time", "duration", "attrs": {key: value}, "samples": Counter}; a sample is
(value, stack, attributes, link) with the stack a tuple of resolved frames
(mapping, address, lines, folded) leaf first and attributes a sorted tuple of
(key, value, unit). Values: ("s", str) / ("i", int) / ("b", bool) /
("a", (values...)).
"""

import base64
import collections
import gzip

BUILD_ID = "process.executable.build_id.gnu"
MAPPING_FLAGS = ("pprof.mapping.has_functions", "pprof.mapping.has_filenames",
                 "pprof.mapping.has_line_numbers", "pprof.mapping.has_inline_frames")


# ---- protobuf wire reading --------------------------------------------------

def _varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        if c < 0x80:
            return v, i
        shift += 7


def _fields(b):
    """(field, wire type, value) for every field of one message; repeated
    varints come packed (bytes) or one by one (int), as the encoder chose."""
    i, n = 0, len(b)
    while i < n:
        key, i = _varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(b, i)
        elif wt == 2:
            ln, i = _varint(b, i)
            v = bytes(b[i:i + ln])
            i += ln
        elif wt == 1:
            v = int.from_bytes(b[i:i + 8], "little")
            i += 8
        elif wt == 5:
            v = int.from_bytes(b[i:i + 4], "little")
            i += 4
        else:
            raise ValueError(f"wire type {wt}")
        yield f, wt, v


def _ints(wt, v):
    if wt == 0:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = _varint(v, i)
        out.append(x)
    return out


def _s64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


class Interner:
    """Equal canonical frames/stacks/attribute lists get one small int, shared
    by both sides of a comparison, so samples hash and compare fast."""

    def __init__(self):
        self.ids, self.objs = {}, []

    def __call__(self, obj):
        i = self.ids.get(obj)
        if i is None:
            i = self.ids[obj] = len(self.objs)
            self.objs.append(obj)
        return i

    def show(self, key):
        value, stack, attrs, link = key
        return (value, tuple(self.objs[f] for f in self.objs[stack]), self.objs[attrs], link)


INTERN = Interner()


def _memo(fn):
    cache = {}

    def wrapped(key):
        k = key if isinstance(key, int) else _int(key)
        if k not in cache:
            cache[k] = fn(k)
        return cache[k]
    return wrapped


def _ungzip(data):
    for _ in range(8):
        if data[:2] != b"\x1f\x8b":
            return data
        data = gzip.decompress(data)
    return data


# ---- pprof -> canonical -------------------------------------------------------

def pprof_profiles(data, trace_key="trace_id", span_key="span_id"):
    """Expected OTLP view of one pprof body (plain or gzip'd), in pprof
    sample-type order, following pprofgate's documented translation."""
    data = _ungzip(data)
    strs, st, samples, maps, locs, funcs, label_memo = [], [], [], {}, {}, {}, {}
    top = {"drop": 0, "keep": 0, "time": 0, "dur": 0, "ptype": (0, 0), "period": 0,
           "comments": [], "doc": 0}
    for f, wt, v in _fields(data):
        if f == 1:
            d = dict((ff, vv) for ff, _, vv in _fields(v))
            st.append((d.get(1, 0), d.get(2, 0)))
        elif f == 2:
            s = {"locs": [], "vals": [], "labels": []}
            for ff, ww, vv in _fields(v):
                if ff == 1:
                    s["locs"] += _ints(ww, vv)
                elif ff == 2:
                    s["vals"] += [_s64(x) for x in _ints(ww, vv)]
                elif ff == 3:
                    lab = label_memo.get(vv)
                    if lab is None:
                        d = dict((a, c) for a, _, c in _fields(vv))
                        lab = label_memo[vv] = (d.get(1, 0), d.get(2, 0), _s64(d.get(3, 0)),
                                                d.get(4, 0))
                    s["labels"].append(lab)
            samples.append(s)
        elif f == 3:
            d = dict((ff, vv) for ff, _, vv in _fields(v))
            maps[d.get(1, 0)] = d
        elif f == 4:
            d = {"lines": []}
            for ff, ww, vv in _fields(v):
                if ff == 4:
                    ld = dict((a, c) for a, _, c in _fields(vv))
                    d["lines"].append(ld)
                else:
                    d[ff] = vv
            locs[d.get(1, 0)] = d
        elif f == 5:
            d = dict((ff, vv) for ff, _, vv in _fields(v))
            funcs[d.get(1, 0)] = d
        elif f == 6:
            strs.append(v.decode("utf-8", "replace"))
        elif f == 7:
            top["drop"] = v
        elif f == 8:
            top["keep"] = v
        elif f == 9:
            top["time"] = _s64(v)
        elif f == 10:
            top["dur"] = _s64(v)
        elif f == 11:
            d = dict((ff, vv) for ff, _, vv in _fields(v))
            top["ptype"] = (d.get(1, 0), d.get(2, 0))
        elif f == 12:
            top["period"] = _s64(v)
        elif f == 13:
            top["comments"] += _ints(wt, v)
        elif f == 15:
            top["doc"] = v

    def s(i):
        return strs[i] if 0 <= i < len(strs) else ""

    def mapping(mid):
        m = maps.get(mid)
        if m is None:
            return None
        # An empty build id is no attribute (pprof has no "absent" apart from "").
        attrs = [(BUILD_ID, ("s", s(m.get(6, 0))), "")] if s(m.get(6, 0)) else []
        for k, key in enumerate(MAPPING_FLAGS):
            if m.get(7 + k, 0):
                attrs.append((key, ("b", True), ""))
        return (m.get(2, 0), m.get(3, 0), m.get(4, 0), s(m.get(5, 0)), tuple(sorted(attrs)))

    def frame_of(lid):
        loc = locs[lid]
        lines = []
        for ln in loc["lines"]:
            fn = funcs.get(ln.get(1, 0), {})
            lines.append((s(fn.get(2, 0)), s(fn.get(3, 0)), s(fn.get(4, 0)), _s64(fn.get(5, 0)),
                          _s64(ln.get(2, 0)), _s64(ln.get(3, 0))))
        return (mapping(loc.get(2, 0)), loc.get(3, 0), tuple(lines), bool(loc.get(5, 0)))

    def hex_id(text, n):
        t = text.lower()
        if len(t) != 2 * n or any(c not in "0123456789abcdef" for c in t) or set(t) == {"0"}:
            return None
        return t

    def label_value(lab):
        _, sv, num, unit = lab
        if sv:
            return ("s", s(sv)), ""
        return ("i", num), s(unit)

    def sample_view(smp):
        labs = [lb for lb in smp["labels"] if lb[1] or lb[2] or lb[3]]
        link = None
        tr = [lb for lb in labs if s(lb[0]) == trace_key]
        sp = [lb for lb in labs if s(lb[0]) == span_key]
        if len(tr) == 1 and len(sp) == 1 and tr[0][1] and sp[0][1]:
            t, p = hex_id(s(tr[0][1]), 16), hex_id(s(sp[0][1]), 8)
            if t and p:
                link = (t, p)
                labs = [lb for lb in labs if lb is not tr[0] and lb is not sp[0]]
        groups = collections.OrderedDict()
        for lb in labs:
            groups.setdefault(s(lb[0]), []).append(lb)
        attrs = []
        for key, g in groups.items():
            if len(g) == 1:
                v, u = label_value(g[0])
            else:
                vals = tuple(label_value(x)[0] for x in g)
                units = {s(x[3]) for x in g if not x[1]}
                v, u = ("a", vals), (units.pop() if len(units) == 1 else "")
            attrs.append((key, v, u))
        key = tuple(smp["locs"])
        stack = stack_memo.get(key)
        if stack is None:
            stack = stack_memo[key] = INTERN(tuple(frame(lid) for lid in key))
        return stack, INTERN(tuple(sorted(attrs, key=repr))), link

    frame = _memo(lambda lid: INTERN(frame_of(lid)))
    stack_memo = {}
    views = [sample_view(x) for x in samples]
    pattrs = {"pprof.profile.drop_frames": ("s", s(top["drop"])),
              "pprof.profile.keep_frames": ("s", s(top["keep"])),
              "pprof.profile.doc_url": ("s", s(top["doc"]))}
    if top["comments"]:
        pattrs["pprof.profile.comment"] = ("a", tuple(("s", s(c)) for c in top["comments"]))
    out = []
    for k, (t, u) in enumerate(st):
        c = collections.Counter()
        for smp, (stack, attrs, link) in zip(samples, views):
            c[(smp["vals"][k] if k < len(smp["vals"]) else None, stack, attrs, link)] += 1
        out.append({"sample_type": (s(t), s(u)),
                    "period_type": (s(top["ptype"][0]), s(top["ptype"][1])),
                    "period": top["period"], "time": top["time"], "duration": top["dur"],
                    "attrs": pattrs, "samples": c})
    return out


# ---- OTLP JSON -> canonical ---------------------------------------------------

def _int(v):
    return int(v) if v not in (None, "") else 0


def _id_hex(v):
    """pdata writes trace/span ids as hex in JSON; protojson as base64."""
    if not v:
        return ""
    if all(c in "0123456789abcdefABCDEF" for c in v) and len(v) in (16, 32):
        return v.lower()
    return base64.b64decode(v).hex()


def any_value(v, strs=()):
    """One AnyValue; pdata's JSON may hold strings as string-table references."""
    if v is None:
        return ("s", "")
    if "stringValueStrindex" in v:
        i = _int(v["stringValueStrindex"])
        return ("s", strs[i] if 0 <= i < len(strs) else "")
    if "stringValue" in v:
        return ("s", v["stringValue"])
    if "intValue" in v:
        return ("i", _int(v["intValue"]))
    if "boolValue" in v:
        return ("b", bool(v["boolValue"]))
    if "doubleValue" in v:
        return ("d", float(v["doubleValue"]))
    if "arrayValue" in v:
        return ("a", tuple(any_value(x, strs) for x in v["arrayValue"].get("values", [])))
    if "bytesValue" in v:
        return ("y", v["bytesValue"])
    if "kvlistValue" in v:
        return ("k", tuple((kv.get("key", ""), any_value(kv.get("value"), strs))
                           for kv in v["kvlistValue"].get("values", [])))
    return ("s", "")


def kv_list(lst, strs=()):
    out = {}
    for kv in lst or []:
        key = kv.get("key", "")
        if "keyStrindex" in kv:
            i = _int(kv["keyStrindex"])
            key = strs[i] if 0 <= i < len(strs) else ""
        out[key] = any_value(kv.get("value"), strs)
    return out


def otlp_profiles(req):
    """[(resource attrs, scope {name, version, attrs}, [profile views])] of one
    ExportProfilesServiceRequest in JSON form (a dict)."""
    d = req.get("dictionary", {})
    strs = d.get("stringTable", [])
    mt, lt, ft = d.get("mappingTable", []), d.get("locationTable", []), d.get("functionTable", [])
    at, kt, stt = d.get("attributeTable", []), d.get("linkTable", []), d.get("stackTable", [])

    def s(i):
        i = _int(i)
        return strs[i] if 0 <= i < len(strs) else ""

    def attr(i):
        a = at[_int(i)]
        return (s(a.get("keyStrindex")), any_value(a.get("value"), strs), s(a.get("unitStrindex")))

    def mapping(i):
        i = _int(i)
        if i == 0:
            return None
        m = mt[i]
        return (_int(m.get("memoryStart")), _int(m.get("memoryLimit")), _int(m.get("fileOffset")),
                s(m.get("filenameStrindex")),
                tuple(sorted((k, v, "") for k, v, _ in map(attr, m.get("attributeIndices", [])))))

    def frame_of(i):
        loc = lt[_int(i)]
        lines = []
        for ln in loc.get("lines", []):
            fn = ft[_int(ln.get("functionIndex"))]
            lines.append((s(fn.get("nameStrindex")), s(fn.get("systemNameStrindex")),
                          s(fn.get("filenameStrindex")), _int(fn.get("startLine")),
                          _int(ln.get("line")), _int(ln.get("column"))))
        folded = any(k == "pprof.location.is_folded" and v == ("b", True)
                     for k, v, _ in map(attr, loc.get("attributeIndices", [])))
        return (mapping(loc.get("mappingIndex")), _int(loc.get("address")), tuple(lines), folded)

    # Tables are shared by every sample: resolve each entry once.
    frame, attr = _memo(lambda i: INTERN(frame_of(i))), _memo(attr)
    stack_memo, attrs_memo = {}, {}

    def stack(i):
        i = _int(i)
        if i not in stack_memo:
            stack_memo[i] = INTERN(tuple(frame(li) for li in stt[i].get("locationIndices", [])))
        return stack_memo[i]

    out = []
    for rp in req.get("resourceProfiles", []):
        rattrs = kv_list(rp.get("resource", {}).get("attributes"), strs)
        for sp in rp.get("scopeProfiles", []):
            sc = sp.get("scope", {})
            scope = {"name": sc.get("name", ""), "version": sc.get("version", ""),
                     "attrs": kv_list(sc.get("attributes"), strs)}
            profs = []
            for p in sp.get("profiles", []):
                c = collections.Counter()
                for smp in p.get("samples", []):
                    frames = stack(smp.get("stackIndex"))
                    ak = tuple(smp.get("attributeIndices", []))
                    if ak not in attrs_memo:
                        attrs_memo[ak] = INTERN(tuple(sorted((attr(a) for a in ak), key=repr)))
                    attrs = attrs_memo[ak]
                    li = _int(smp.get("linkIndex"))
                    link = None
                    if li:
                        lk = kt[li]
                        link = (_id_hex(lk.get("traceId")), _id_hex(lk.get("spanId")))
                    vals = [_int(v) for v in smp.get("values", [])]
                    ts = smp.get("timestampsUnixNano", [])
                    n = max(1, len(ts)) if not vals else 1
                    c[(vals[0] if len(vals) == 1 else tuple(vals), frames, attrs, link)] += n
                st, pt = p.get("sampleType", {}), p.get("periodType", {})
                pattrs = {}
                for a in p.get("attributeIndices", []):
                    k, v, _ = attr(a)
                    pattrs[k] = v
                profs.append({"sample_type": (s(st.get("typeStrindex")), s(st.get("unitStrindex"))),
                              "period_type": (s(pt.get("typeStrindex")), s(pt.get("unitStrindex"))),
                              "period": _int(p.get("period")), "time": _int(p.get("timeUnixNano")),
                              "duration": _int(p.get("durationNano")), "attrs": pattrs,
                              "samples": c})
            out.append((rattrs, scope, profs))
    return out


def otlp_order(n):
    """OTLP position of each pprof sample type (the last pprof type goes first)."""
    if n < 2:
        return list(range(n))
    order = list(range(n))
    order[0], order[n - 1] = n - 1, 0
    return order


def diff_profile(want, got, limit=3):
    """Human-readable differences between two canonical profiles ([] if equal)."""
    out = []
    for k in ("sample_type", "period_type", "period", "time", "duration", "attrs"):
        if want[k] != got[k]:
            out.append(f"{k}: want {want[k]!r} got {got[k]!r}")
    if want["samples"] != got["samples"]:
        miss = list((want["samples"] - got["samples"]).items())
        extra = list((got["samples"] - want["samples"]).items())
        show = [(INTERN.show(k), n) for k, n in miss[:limit]]
        show2 = [(INTERN.show(k), n) for k, n in extra[:limit]]
        out.append(f"samples: {sum(want['samples'].values())} want, "
                   f"{sum(got['samples'].values())} got; missing {len(miss)} kinds "
                   f"e.g. {show!r}; unexpected {len(extra)} e.g. {show2!r}")
    return out
