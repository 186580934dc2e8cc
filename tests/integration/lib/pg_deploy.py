# SPDX-License-Identifier: Apache-2.0
"""Runs pprofgate the way its shipped deployment files say, without a Docker
daemon or a cluster (needs root: mounts, chroot, setuid; the caller is
expected to be in private network and mount namespaces).

* Image: the final stage of docker/Dockerfile is read and reproduced as a
  chroot: Debian's libraries come from the host (read-only binds, standing in
  for the apt-get line), COPY'd files are copied, the user/group and
  directories that RUN creates (groupadd, useradd, install -d, mkdir) exist
  with their owners, exec-form RUN steps run in it, and USER, ENV, WORKDIR,
  ENTRYPOINT and CMD apply. A RUN command the reader does not know fails
  loudly instead of being skipped.
* Pod: the kubelet's env rules (fieldRef values; $(VAR) expands only to a
  variable defined earlier in the same container, $$ escapes, an unknown
  reference stays as written), args expansion, configMap and emptyDir
  volumes, runAsUser/runAsGroup/fsGroup and readOnlyRootFilesystem, and
  probes dialled at the pod IP as the kubelet does.
"""
import ctypes
import json
import os
import re
import shlex
import shutil
import subprocess
import time
import urllib.request

HOST_DIRS = ("usr", "lib", "lib64", "lib32", "libx32", "bin", "sbin")
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def sh(*cmd):
    subprocess.run(list(cmd), check=True)


def net_setup(addrs):
    """Brings lo up in this (private) network namespace and gives it @addrs."""
    sh("ip", "link", "set", "lo", "up")
    for a in addrs:
        if a != "127.0.0.1":
            sh("ip", "addr", "add", a + "/32", "dev", "lo")


# ---- Dockerfile ---------------------------------------------------------------

def dockerfile_final_stage(path):
    """(instruction, argument text) of the last stage, continuations joined."""
    lines, cur = [], ""
    with open(path) as f:
        for raw in f:
            s = raw.rstrip("\n")
            if not cur and (not s.strip() or s.lstrip().startswith("#")):
                continue
            if s.lstrip().startswith("#"):
                continue
            if s.endswith("\\"):
                cur += s[:-1] + " "
                continue
            cur += s
            lines.append(cur.strip())
            cur = ""
    out = []
    for line in lines:
        ins, _, arg = line.partition(" ")
        ins = ins.upper()
        if ins == "FROM":
            out = []
        out.append((ins, arg.strip()))
    return out


class Image:
    """The image a Dockerfile's final stage describes, as a directory tree."""

    def __init__(self, dockerfile, context, copy_from, notes):
        self.users, self.groups = {}, {}
        self.files = []      # (src, dst in image, mode)
        self.dirs = {}       # dst -> (uid, gid, mode)
        self.run_exec = []   # exec-form RUN steps: (argv, user)
        self.env = {"PATH": DEFAULT_PATH}
        self.user = "0:0"
        self.workdir = "/"
        self.entrypoint, self.cmd = [], []
        self.notes = notes
        for ins, arg in dockerfile_final_stage(dockerfile):
            if ins == "FROM":
                continue
            if ins == "RUN":
                if arg.startswith("["):
                    self.run_exec.append((json.loads(arg), self.user))
                else:
                    for part in re.split(r"\s*&&\s*", arg):
                        self._run(shlex.split(part))
            elif ins == "COPY":
                words = shlex.split(arg)
                frm = None
                while words and words[0].startswith("--"):
                    if words[0].startswith("--from="):
                        frm = words[0][7:]
                    words.pop(0)
                src, dst = words[0], words[1]
                if frm is not None:
                    if src not in copy_from:
                        raise ValueError(f"COPY --from={frm} {src}: no local stand-in")
                    hsrc = copy_from[src]
                else:
                    hsrc = os.path.join(context, src)
                self.files.append((hsrc, dst, os.stat(hsrc).st_mode & 0o7777))
            elif ins == "USER":
                self.user = arg
            elif ins == "ENV":
                if "=" in arg.split()[0]:
                    for w in shlex.split(arg):
                        k, _, v = w.partition("=")
                        self.env[k] = v
                else:
                    k, _, v = arg.partition(" ")
                    self.env[k] = v.strip()
            elif ins == "WORKDIR":
                self.workdir = arg
            elif ins == "ENTRYPOINT":
                self.entrypoint = json.loads(arg)
            elif ins == "CMD":
                self.cmd = json.loads(arg)
            elif ins in ("EXPOSE", "STOPSIGNAL", "LABEL", "VOLUME", "ARG"):
                continue
            else:
                raise ValueError(f"Dockerfile instruction {ins} is not understood by this test")

    def _uidgid(self, spec):
        u, _, g = spec.partition(":")
        uid = int(u) if u.isdigit() else self.users[u][0]
        gid = int(g) if g.isdigit() else (self.groups[g] if g else
                                            self.users.get(u, (uid, uid))[1])
        return uid, gid

    def _run(self, argv):
        if not argv:
            return
        prog = os.path.basename(argv[0])
        opts, pos, i = {}, [], 1
        while i < len(argv):
            a = argv[i]
            if a.startswith("-") and a not in ("-d", "-p", "-y", "-rf", "-r", "-f", "-qq", "-q",
                                                "--system", "--no-create-home",
                                                "--no-install-recommends") and i + 1 < len(argv):
                opts[a] = argv[i + 1]
                i += 2
                continue
            if not a.startswith("-"):
                pos.append(a)
            i += 1
        if prog in ("apt-get", "rm"):
            # Packages: the host's Debian libraries stand in (bound read-only).
            self.notes.append(f"RUN {prog} ...: host libraries stand in")
        elif prog == "groupadd":
            self.groups[pos[-1]] = int(opts.get("--gid", opts.get("-g", "999")))
        elif prog == "useradd":
            uid = int(opts.get("--uid", opts.get("-u", "999")))
            g = opts.get("--gid", opts.get("-g", pos[-1]))
            gid = int(g) if g.isdigit() else self.groups[g]
            self.users[pos[-1]] = (uid, gid, opts.get("--home-dir", "/nonexistent"),
                                   opts.get("--shell", "/usr/sbin/nologin"))
        elif prog == "install" and "-d" in argv:
            uid = self._uidgid(opts["-o"])[0] if "-o" in opts else 0
            gid = self._uidgid("0:" + opts["-g"])[1] if "-g" in opts else 0
            mode = int(opts.get("-m", "755"), 8)
            for d in pos:
                self.dirs[d] = (uid, gid, mode)
        elif prog == "mkdir":
            for d in pos:
                self.dirs[d] = (0, 0, 0o755)
        elif prog == "chown":
            uid, gid = self._uidgid(pos[0])
            for d in pos[1:]:
                m = self.dirs.get(d, (0, 0, 0o755))[2]
                self.dirs[d] = (uid, gid, m)
        else:
            raise ValueError(f"RUN {' '.join(argv)}: not understood by this test")


class Rootfs:
    """A container's root: host libraries read-only, the image's files, mounts.
    Owner: the caller's temp dir; mounts die with the mount namespace."""

    def __init__(self, tmp, image):
        self.image = image
        self.root = os.path.join(tmp, "rootfs")
        self.binds = []  # (host, in-root, ro, recursive)
        os.makedirs(self.root)
        # /usr/local is the image's own (COPY targets it), not the host's.
        tops = ["/usr/" + d for d in sorted(os.listdir("/usr")) if d != "local"]
        for hp in ["/" + d for d in HOST_DIRS if d != "usr"] + tops:
            if os.path.islink(hp):
                os.makedirs(os.path.dirname(self._p(hp)), exist_ok=True)
                os.symlink(os.readlink(hp), self._p(hp))
            elif os.path.isdir(hp):
                self.bind(hp, hp, ro=True)
        for d in ("/dev", "/proc", "/sys"):
            self.bind(d, d, ro=False, recursive=True)
        os.makedirs(self._p("/etc"), exist_ok=True)
        for f in ("/etc/ld.so.cache", "/etc/hosts", "/etc/nsswitch.conf"):
            if os.path.exists(f):
                shutil.copy(f, self._p(f))
        if os.path.isdir("/etc/ssl"):
            self.bind("/etc/ssl", "/etc/ssl", ro=True)
        with open(self._p("/etc/passwd"), "w") as f:
            f.write("root:x:0:0:root:/root:/bin/sh\n")
            for name, (uid, gid, home, shell) in image.users.items():
                f.write(f"{name}:x:{uid}:{gid}::{home}:{shell}\n")
        with open(self._p("/etc/group"), "w") as f:
            f.write("root:x:0:\n")
            for name, gid in image.groups.items():
                f.write(f"{name}:x:{gid}:\n")
        for d, (uid, gid, mode) in sorted(image.dirs.items()):
            os.makedirs(self._p(d), exist_ok=True)
            os.chown(self._p(d), uid, gid)
            os.chmod(self._p(d), mode)
        for src, dst, mode in image.files:
            os.makedirs(os.path.dirname(self._p(dst)), exist_ok=True)
            shutil.copy(src, self._p(dst))
            os.chmod(self._p(dst), mode)

    def _p(self, path):
        return os.path.join(self.root, path.lstrip("/"))

    def stat(self, path):
        return os.stat(self._p(path))

    def bind(self, host, inside, ro, recursive=False):
        """Mounts @host at @inside (a directory or file)."""
        p = self._p(inside)
        if os.path.isdir(host):
            os.makedirs(p, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(p), exist_ok=True)
            open(p, "a").close()
        self.binds.append((host, p, ro, recursive))

    def mount(self, read_only_root):
        """Makes the tree live; the root itself read-only when asked."""
        sh("mount", "--make-rprivate", "/")
        sh("mount", "--bind", self.root, self.root)
        for host, p, ro, rec in self.binds:
            sh("mount", "--rbind" if rec else "--bind", host, p)
            if ro:
                sh("mount", "-o", "remount,bind,ro", p)
        if read_only_root:
            sh("mount", "-o", "remount,bind,ro", self.root)

    def popen(self, argv, env, user, groups=(), workdir="/", stdout=None):
        """Starts @argv inside the root as uid:gid @user with exactly @env."""
        uid, gid = (int(x) for x in user.split(":"))
        root = self.root
        libc = ctypes.CDLL(None, use_errno=True)

        def enter():
            os.chroot(root)
            os.chdir(workdir)
            os.setgroups(list(groups))
            os.setgid(gid)
            os.setuid(uid)
            libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS, as no-new-privileges

        return subprocess.Popen(argv, env=env, preexec_fn=enter, stdout=stdout,
                                stderr=subprocess.STDOUT)


def image_user(image, spec):
    """USER text -> "uid:gid" using the image's passwd/group."""
    u, _, g = spec.partition(":")
    if u.isdigit():
        uid = int(u)
        gid = int(g) if g.isdigit() else next((v[1] for v in image.users.values() if v[0] == uid), 0)
    else:
        uid, gid = image.users[u][0], image.users[u][1]
        if g:
            gid = int(g) if g.isdigit() else image.groups[g]
    return f"{uid}:{gid}"


# ---- the kubelet --------------------------------------------------------------

_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def expand(text, defined):
    """Kubernetes $(VAR) expansion: only names already in @defined expand;
    $$ is a literal $; anything else stays as written."""
    def one(m):
        if m.group(0) == "$$":
            return "$"
        name = m.group(1)
        return defined[name] if name in defined else m.group(0)
    return _REF.sub(one, text)


def field_ref(pod, path):
    m = re.match(r"metadata\.(labels|annotations)\['(.*)'\]$", path)
    if m:
        return pod[m.group(1)].get(m.group(2), "")
    table = {"metadata.name": pod["name"], "metadata.namespace": pod["namespace"],
             "metadata.uid": pod["uid"], "spec.nodeName": pod["node_name"],
             "spec.serviceAccountName": pod.get("service_account", "default"),
             "status.podIP": pod["pod_ip"], "status.podIPs": pod["pod_ip"],
             "status.hostIP": pod["host_ip"], "status.hostIPs": pod["host_ip"]}
    if path not in table:
        raise ValueError(f"fieldRef {path}: not a field the downward API exposes")
    return table[path]


def container_env(container, pod, config_maps):
    """The env a container gets, in the kubelet's order and rules."""
    env = {}
    for e in container.get("env", []) or []:
        if "value" in e:
            env[e["name"]] = expand(str(e["value"]), env)
        elif "valueFrom" in e:
            vf = e["valueFrom"]
            if "fieldRef" in vf:
                env[e["name"]] = field_ref(pod, vf["fieldRef"]["fieldPath"])
            elif "configMapKeyRef" in vf:
                ref = vf["configMapKeyRef"]
                env[e["name"]] = config_maps[ref["name"]]["data"][ref["key"]]
            else:
                raise ValueError(f"env {e['name']}: valueFrom {list(vf)} not emulated")
        else:
            env[e["name"]] = ""
    return env


def probe_ok(probe, pod_ip, ports, timeout=1.0):
    """One probe as the kubelet sends it: at the pod IP (no host given)."""
    def port_of(p):
        return ports[p] if isinstance(p, str) else int(p)
    if "httpGet" in probe:
        h = probe["httpGet"]
        host = h.get("host", pod_ip)
        url = f"http://{host}:{port_of(h['port'])}{h.get('path', '/')}"
        try:
            with urllib.request.urlopen(url, timeout=timeout) as r:
                return 200 <= r.status < 400
        except Exception:
            return False
    if "tcpSocket" in probe:
        import socket
        try:
            socket.create_connection((probe["tcpSocket"].get("host", pod_ip),
                                      port_of(probe["tcpSocket"]["port"])), timeout).close()
            return True
        except OSError:
            return False
    raise ValueError(f"probe {list(probe)} not emulated")


def wait_probe(probe, pod_ip, ports, seconds):
    end = time.time() + seconds
    while time.time() < end:
        if probe_ok(probe, pod_ip, ports):
            return True
        time.sleep(0.1)
    return False
