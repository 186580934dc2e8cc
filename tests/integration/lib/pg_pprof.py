# SPDX-License-Identifier: Apache-2.0
"""Builds pprof Profile messages (perftools profile.proto) byte by byte for
tests that need exact contents: large pushes, raw bytes in strings."""


def varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | 0x80 if n else b)
        if not n:
            return bytes(out)


def field(num, wt, payload):
    """wt 0: varint field; otherwise length-delimited (payload bytes)."""
    if wt == 0:
        return varint(num << 3) + varint(payload)
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def big_pprof(n_funcs, n_samples, tag=0):
    """A CPU profile with @n_funcs functions and @n_samples 8-frame samples;
    @tag makes function names (and so the encoding) differ between pushes."""
    strings = [b"", b"cpu", b"nanoseconds", b"big.go"]
    out = bytearray()
    out += field(1, 2, field(1, 0, 1) + field(2, 0, 2))
    for f in range(1, n_funcs + 1):
        strings.append(b"pkg%d.function_number_%d_with_a_long_name" % (tag, f))
        out += field(5, 2, field(1, 0, f) + field(2, 0, len(strings) - 1) + field(4, 0, 3))
        out += field(4, 2, field(1, 0, f) + field(3, 0, 0x1000 + f) +
                     field(4, 2, field(1, 0, f) + field(2, 0, f)))
    for s in range(n_samples):
        locs = b"".join(varint(1 + (s // 4 + k * 3) % n_funcs) for k in range(8))
        out += field(2, 2, field(1, 2, locs) + field(2, 2, varint(1000 + s)))
    for s in strings:
        out += field(6, 2, s)
    out += field(12, 0, 10000000) + field(11, 2, field(1, 0, 1) + field(2, 0, 2))
    return bytes(out)
