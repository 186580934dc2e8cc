# SPDX-License-Identifier: Apache-2.0
"""A raw-socket scrape target for test_scale_bad_responses.py: the first path
segment picks a malformed answer; anything else gets a 200 with the profile
file given as argv[1]. Prints its port, serves 127.0.0.1 until killed."""
import socket, threading, sys
HEAP = open(sys.argv[1], "rb").read() if len(sys.argv) > 1 else b"x"
def ok(body):
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body
MODES = {
    "negcl": b"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\nhello",
    "http09": b"just some bytes, no status line at all\n" * 3,
    "bighdr": b"HTTP/1.1 200 OK\r\n" + b"X-Pad: " + b"a" * (4 << 20) + b"\r\n\r\n",
    "cont": b"HTTP/1.1 100 Continue\r\n\r\n" * 1000 + ok(HEAP),
    "cont2": b"HTTP/1.1 100 Continue\r\n\r\n" * 2 + ok(HEAP),
    "hugestatus": b"HTTP/1.1 99999999999999999999 Weird\r\nContent-Length: 2\r\n\r\nhi",
    "loc": b"HTTP/1.1 302 Found\r\nLocation: ftp://x/\x7f\xff\xfe\r\nContent-Length: 0\r\n\r\n",
}
def handle(c):
    try:
        data = b""
        while b"\r\n\r\n" not in data:
            d = c.recv(4096)
            if not d: return
            data += d
        path = data.split(b" ")[1].decode()
        mode = path.strip("/").split("/")[0]
        c.sendall(MODES.get(mode, ok(HEAP)))
    except OSError:
        pass
    finally:
        c.close()
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(64)
print(s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept()
    threading.Thread(target=handle, args=(c,), daemon=True).start()
