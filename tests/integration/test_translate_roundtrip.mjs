// SPDX-License-Identifier: Apache-2.0
// Round trip of every pprof fixture through our translator, checked by
// independent decoders: the protobufjs OTLP code shipped in
// @coralogix/opentelemetry-profiling (dist/generated/otlp.js) for our output,
// pprof-format for the input. Per sample type, every (stack as
// function/file/line, attributes, link) -> value total must match; mappings,
// times and periods must survive; index 0 of every table must be the zero
// value and no string may repeat.
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, statSync, existsSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import path from 'node:path';

const src = process.env.PG_SOURCE_DIR || process.cwd();
const build = process.env.PG_BUILD_DIR || path.join(src, 'build');
const fixtures = process.env.PG_FIXTURES || path.join(src, 'tests/fixtures');
const tool = path.join(build, 'tests', 'pg_pprof2otlp');
const require = createRequire(path.join(src, 'tests/node/package.json'));
const otlp = require(path.join(src,
  'tests/node/node_modules/@coralogix/opentelemetry-profiling/dist/generated/otlp.js'));
const { Profile } = require('pprof-format');
const Req = otlp.opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest;

let passed = 0, failed = 0;
function check(cond, what) {
  if (cond) { passed++; } else { failed++; console.error(`FAIL ${what}`); }
}

function walk(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((n) => {
    const p = path.join(dir, n);
    if (statSync(p).isDirectory()) return walk(p);
    return /\.(pprof|pb)(\.gz)*$/.test(n) ? [p] : [];
  });
}

const big = (v) => (v === undefined || v === null ? 0n
  : typeof v === 'bigint' ? v : typeof v === 'number' ? BigInt(v) : BigInt(v.toString()));
const i64 = (v) => BigInt.asIntN(64, big(v));
const hex = (b) => Buffer.from(b || []).toString('hex');

// ---- the pprof side (the translation rules, written independently) ----
function pprofTotals(buf, traceKey = 'trace_id', spanKey = 'span_id') {
  while (buf[0] === 0x1f && buf[1] === 0x8b) buf = gunzipSync(buf);
  const p = Profile.decode(buf);
  const S = (i) => p.stringTable.strings[Number(i)];
  const fns = new Map(p.function.map((f) => [String(f.id), f]));
  const maps = new Map(p.mapping.map((m) => [String(m.id), m]));
  const locs = new Map(p.location.map((l) => [String(l.id), l]));
  const frame = (lid) => {
    const l = locs.get(String(lid));
    const m = l.mappingId ? maps.get(String(l.mappingId)) : null;
    if (!l.line.length) return `@${big(l.address).toString(16)}:${m ? S(m.filename) : ''}`;
    return l.line.map((ln) => {
      const f = fns.get(String(ln.functionId));
      return `${S(f.name)}|${S(f.filename)}|${big(ln.line)}`;
    }).join(';');
  };
  const types = p.sampleType.map((t) => `${S(t.type)}/${S(t.unit)}`);
  const totals = types.map(() => new Map());
  for (const s of p.sample) {
    let labels = s.label.filter((l) => big(l.str) !== 0n || big(l.num) !== 0n || big(l.numUnit) !== 0n);
    let link = '';
    const tr = labels.filter((l) => S(l.key) === traceKey), sp = labels.filter((l) => S(l.key) === spanKey);
    if (tr.length === 1 && sp.length === 1 && big(tr[0].str) && big(sp[0].str)) {
      const t = S(tr[0].str), z = S(sp[0].str);
      if (/^[0-9a-fA-F]{32}$/.test(t) && /^[0-9a-fA-F]{16}$/.test(z) && /[1-9a-fA-F]/.test(t) && /[1-9a-fA-F]/.test(z)) {
        link = `${t.toLowerCase()}/${z.toLowerCase()}`;
        labels = labels.filter((l) => l !== tr[0] && l !== sp[0]);
      }
    }
    const groups = new Map();
    for (const l of labels) {
      const k = S(l.key);
      if (!groups.has(k)) groups.set(k, []);
      groups.get(k).push(l);
    }
    const attrs = [];
    for (const [k, ls] of groups) {
      const vals = ls.map((l) => (big(l.str) ? S(l.str) : i64(l.num).toString()));
      const units = [...new Set(ls.filter((l) => !big(l.str)).map((l) => S(l.numUnit)))];
      const unit = units.length === 1 ? units[0] : '';
      attrs.push(`${k}=${ls.length === 1 ? vals[0] : '[' + vals.join(',') + ']'}${unit ? '[' + unit + ']' : ''}`);
    }
    attrs.sort();
    const key = JSON.stringify([s.locationId.map(frame), attrs, link]);
    s.value.forEach((v, i) => {
      totals[i].set(key, (totals[i].get(key) || 0n) + i64(v));
    });
  }
  return { p, S, types, totals };
}

// ---- the OTLP side ----
function anyStr(v) {
  if (v.stringValue !== undefined && v.stringValue !== null && v.value === 'stringValue') return v.stringValue;
  if (v.value === 'intValue') return i64(v.intValue).toString();
  if (v.value === 'boolValue') return String(v.boolValue);
  if (v.value === 'arrayValue') return '[' + v.arrayValue.values.map(anyStr).join(',') + ']';
  return v.stringValue ?? '';
}

function otlpTotals(buf) {
  const req = Req.decode(buf);
  const d = req.dictionary;
  const S = (i) => d.stringTable[i || 0];
  const frame = (li) => {
    const l = d.locationTable[li];
    const m = d.mappingTable[l.mappingIndex || 0];
    if (!l.lines.length) return `@${big(l.address).toString(16)}:${l.mappingIndex ? S(m.filenameStrindex) : ''}`;
    return l.lines.map((ln) => {
      const f = d.functionTable[ln.functionIndex || 0];
      return `${S(f.nameStrindex)}|${S(f.filenameStrindex)}|${i64(ln.line)}`;
    }).join(';');
  };
  const attr = (ai) => {
    const a = d.attributeTable[ai];
    return `${S(a.keyStrindex)}=${anyStr(a.value)}${a.unitStrindex ? '[' + S(a.unitStrindex) + ']' : ''}`;
  };
  const sp = req.resourceProfiles[0].scopeProfiles[0];
  const out = new Map();
  for (const pr of sp.profiles) {
    const t = `${S(pr.sampleType.typeStrindex)}/${S(pr.sampleType.unitStrindex)}`;
    const m = new Map();
    for (const s of pr.samples) {
      const st = d.stackTable[s.stackIndex || 0];
      const link = s.linkIndex ? `${hex(d.linkTable[s.linkIndex].traceId)}/${hex(d.linkTable[s.linkIndex].spanId)}` : '';
      const attrs = (s.attributeIndices || []).map(attr).sort();
      const key = JSON.stringify([st.locationIndices.map(frame), attrs, link]);
      m.set(key, (m.get(key) || 0n) + s.values.reduce((a, v) => a + i64(v), 0n));
    }
    out.set(t, { totals: m, profile: pr });
  }
  return { req, d, sp, out, S };
}

function mapsEqual(a, b) {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) if (b.get(k) !== v) return false;
  return true;
}

const files = [...walk(path.join(fixtures, 'pprof')), ...walk(path.join(fixtures, 'sdk'))];
check(files.length >= 10, `found ${files.length} fixtures`);
for (const f of files) {
  const name = path.relative(fixtures, f);
  let bytes;
  try {
    bytes = execFileSync(tool, ['-z', f], { maxBuffer: 1 << 30 });
  } catch (e) {
    check(false, `${name}: translator failed: ${e.stderr}`);
    continue;
  }
  const want = pprofTotals(readFileSync(f));
  const got = otlpTotals(bytes);
  const { d, sp, S } = got;
  check(sp.profiles.length === want.types.length, `${name}: one profile per sample type`);
  // order: last pprof type first, first last
  if (want.types.length > 1) {
    const first = sp.profiles[0].sampleType, last = sp.profiles[sp.profiles.length - 1].sampleType;
    check(`${S(first.typeStrindex)}/${S(first.unitStrindex)}` === want.types[want.types.length - 1], `${name}: profiles[0] is the last pprof type`);
    check(`${S(last.typeStrindex)}/${S(last.unitStrindex)}` === want.types[0], `${name}: last profile is the first pprof type`);
  }
  want.types.forEach((t, i) => {
    const o = got.out.get(t);
    check(o && mapsEqual(o.totals, want.totals[i]), `${name}: totals for ${t}`);
    if (o && !mapsEqual(o.totals, want.totals[i])) {
      console.error('  pprof:', [...want.totals[i]].slice(0, 3), '\n  otlp :', [...o.totals].slice(0, 3));
    }
    if (o) {
      const pr = o.profile;
      check(big(pr.timeUnixNano) === big(want.p.timeNanos), `${name}: time for ${t}`);
      check(big(pr.durationNano) === big(want.p.durationNanos), `${name}: duration for ${t}`);
      check(i64(pr.period) === i64(want.p.period), `${name}: period for ${t}`);
      const pt = want.p.periodType;
      check(S(pr.periodType.typeStrindex) === (pt ? want.S(pt.type) : '') &&
            S(pr.periodType.unitStrindex) === (pt ? want.S(pt.unit) : ''), `${name}: period type for ${t}`);
    }
  });
  // links: exactly the distinct valid (trace, span) pairs of the input
  const wantLinks = new Set([...want.totals[0] || []].map(([k]) => JSON.parse(k)[2]).filter((x) => x));
  check(d.linkTable.length === wantLinks.size + 1, `${name}: ${wantLinks.size} links`);
  if (name.startsWith('pprof/edge/links') || name.startsWith('pprof/go/cpu')) {
    check(wantLinks.size > 0, `${name}: fixture has links`);
  }
  // mappings: every pprof mapping, in order
  const mt = d.mappingTable;
  check(mt.length === want.p.mapping.length + 1, `${name}: mapping count`);
  want.p.mapping.forEach((m, i) => {
    const o = mt[i + 1];
    const bid = want.S(m.buildId);
    const attrs = (o.attributeIndices || []).map((ai) => d.attributeTable[ai]);
    const b = attrs.find((a) => S(a.keyStrindex) === 'process.executable.build_id.gnu');
    check(o && big(o.memoryStart) === big(m.memoryStart) && big(o.memoryLimit) === big(m.memoryLimit) &&
          big(o.fileOffset) === big(m.fileOffset) && S(o.filenameStrindex) === want.S(m.filename) &&
          (bid ? b && b.value.stringValue === bid : !b), `${name}: mapping ${i}`);
  });
  // zero values at index 0, no repeated string
  check(d.stringTable[0] === '', `${name}: string_table[0] is ""`);
  check(new Set(d.stringTable).size === d.stringTable.length, `${name}: no repeated string`);
  const l0 = d.linkTable[0];
  check(hex(l0.traceId) === '0'.repeat(32) && hex(l0.spanId) === '0'.repeat(16), `${name}: link_table[0] zero ids`);
  const m0 = mt[0], loc0 = d.locationTable[0], f0 = d.functionTable[0], a0 = d.attributeTable[0], s0 = d.stackTable[0];
  check(!big(m0.memoryStart) && !big(m0.memoryLimit) && !m0.filenameStrindex && !(m0.attributeIndices || []).length &&
        !loc0.mappingIndex && !big(loc0.address) && !loc0.lines.length && !f0.nameStrindex && !f0.filenameStrindex &&
        !a0.keyStrindex && !a0.value && !s0.locationIndices.length, `${name}: index 0 zero values`);
  // no orphans: every string, function, location, stack, attribute, link is referenced
  const used = { s: new Set([0]), f: new Set([0]), l: new Set([0]), st: new Set([0]), a: new Set([0]), k: new Set([0]) };
  const useAttr = (list) => (list || []).forEach((ai) => {
    used.a.add(ai);
    const a = d.attributeTable[ai];
    used.s.add(a.keyStrindex || 0); used.s.add(a.unitStrindex || 0);
  });
  for (const m of mt) { used.s.add(m.filenameStrindex || 0); useAttr(m.attributeIndices); }
  for (const pr of sp.profiles) {
    for (const vt of [pr.sampleType, pr.periodType]) { used.s.add(vt.typeStrindex || 0); used.s.add(vt.unitStrindex || 0); }
    useAttr(pr.attributeIndices);
    for (const s of pr.samples) {
      used.st.add(s.stackIndex || 0); used.k.add(s.linkIndex || 0); useAttr(s.attributeIndices);
      for (const li of d.stackTable[s.stackIndex || 0].locationIndices) {
        used.l.add(li);
        const l = d.locationTable[li];
        useAttr(l.attributeIndices);
        for (const ln of l.lines) {
          used.f.add(ln.functionIndex || 0);
          const f = d.functionTable[ln.functionIndex || 0];
          [f.nameStrindex, f.systemNameStrindex, f.filenameStrindex].forEach((x) => used.s.add(x || 0));
        }
      }
    }
  }
  check(used.s.size === d.stringTable.length && used.f.size === d.functionTable.length &&
        used.l.size === d.locationTable.length && used.st.size === d.stackTable.length &&
        used.a.size === d.attributeTable.length && used.k.size === d.linkTable.length,
        `${name}: no orphan entries`);
  for (const [k, t] of [['stack', d.stackTable], ['location', d.locationTable], ['function', d.functionTable],
    ['link', d.linkTable], ['attribute', d.attributeTable]]) {
    const enc = t.map((e) => JSON.stringify(e.toJSON ? e.toJSON() : e));
    check(new Set(enc).size === enc.length, `${name}: no duplicate ${k}`);
  }
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
