# SPDX-License-Identifier: Apache-2.0
"""Raw-socket client pieces the hostile suites share: connections from a
chosen source address, one-response reads that keep pipelined bytes, the
"has the server closed it" test, trickling clients and /metrics sums."""
import re
import socket
import time


def conn(port, src="127.0.0.1", timeout=5):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    return s


_LEFT = {}  # socket -> bytes read past the last response (pipelining)


def read_response(s, limit=1 << 16, lenient=False):
    """One response (status, headers dict, body); (None, ...) on EOF first.
    A reset raises OSError, or reads as EOF when @lenient."""
    buf = _LEFT.pop(s, b"")
    try:
        while b"\r\n\r\n" not in buf:
            d = s.recv(4096)
            if not d:
                return None, {}, buf
            buf += d
            if len(buf) > limit:
                break
    except OSError:
        if not lenient:
            raise
        return None, {}, buf
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    hdrs = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(b":")
        hdrs[k.strip().lower().decode()] = v.strip().decode()
    n = int(hdrs.get("content-length", "0"))
    while len(rest) < n:
        d = s.recv(4096)
        if not d:
            break
        rest += d
    if rest[n:]:
        _LEFT[s] = rest[n:]
    return status, hdrs, rest[:n]


def closed(s, wait=0.0):
    """True when the server has closed the connection (EOF or reset), after
    reading whatever answer it sent first."""
    s.settimeout(wait if wait > 0 else 0.0001)
    try:
        while True:
            d = s.recv(65536)
            if not d:
                return True
    except (BlockingIOError, socket.timeout):
        return False
    except OSError:
        return True


def exchange(port, data, src="127.0.0.1", timeout=5, lenient=False):
    s = conn(port, src, timeout)
    try:
        s.sendall(data)
        return read_response(s, lenient=lenient)
    finally:
        _LEFT.pop(s, None)
        s.close()


def trickle(socks, piece, seconds, every):
    """Sends piece(i) on every socket each @every seconds for @seconds (a
    slowloris client), then returns how many the server left open; closes
    them all."""
    t0 = time.monotonic()
    i = 0
    while time.monotonic() - t0 < seconds:
        for s in socks:
            try:
                s.send(piece(i))
            except OSError:
                pass
        i += 1
        time.sleep(every)
    still = sum(not closed(s) for s in socks)
    for s in socks:
        s.close()
    return still


def metric(port, name_re):
    """Sum of the samples on @port's /metrics whose line matches @name_re."""
    _, _, body = exchange(port, b"GET /metrics HTTP/1.1\r\nHost: m\r\n\r\n")
    return sum(float(ln.rsplit(" ", 1)[1]) for ln in body.decode(errors="replace").splitlines()
               if re.match(name_re, ln))
