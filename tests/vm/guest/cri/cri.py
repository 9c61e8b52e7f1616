#!/usr/bin/python3
"""A minimal Kubernetes CRI client: the kubelet's calls of a pod's life.

It speaks runtime.v1 (k8s.io/cri-api, pkg/apis/runtime/v1/api.proto) over
gRPC (python3-grpcio) to a CRI runtime's socket, encoding the few messages it
sends and decoding the fields it reads itself (protobuf's wire format), so
it needs neither protoc nor generated stubs. Field numbers are api.proto's.

  cri.py [--sock PATH] [--timeout S] COMMAND ARGS...
    version                          runtime name, version, CRI version
    pull IMAGE                       PullImage; prints the image ref
    rmi IMAGE                        RemoveImage
    runp POD [HANDLER]               RunPodSandbox (host network, own pid
                                     namespace per container; HANDLER: a
                                     runtime handler of containerd's config,
                                     else its default); prints its id
    create POD_ID POD IMAGE NAME [--cdi DEV]... [--mount HOST:CTR[:ro]]...
           [--annotation K=V]... [--env K=V]... [-- ARGS...]
                                     CreateContainer (the pod's config again,
                                     as the kubelet passes it); prints its id
    start ID | stop ID | rm ID       StartContainer, StopContainer (0 s), RemoveContainer
    status ID                        ContainerStatus: "STATE PID IMAGE_REF"
    checkpoint ID ARCHIVE            CheckpointContainer (timeout: --timeout)
    stopp POD_ID | rmp POD_ID        StopPodSandbox, RemovePodSandbox
    ps                               ListContainers: "ID POD_ID NAME STATE" lines
    pods                             ListPodSandbox: "ID NAME STATE" lines
A failed call prints one line, "cri: METHOD: CODE: DETAILS", and exits 1;
--timeout S is each call's gRPC deadline (a cancelled call: DEADLINE_EXCEEDED).
"""
import json
import sys

import grpc

RUNTIME = "/runtime.v1.RuntimeService/"
IMAGE = "/runtime.v1.ImageService/"
STATES = ["CREATED", "RUNNING", "EXITED", "UNKNOWN"]
POD_STATES = ["READY", "NOTREADY"]
NODE, CONTAINER = 2, 1  # NamespaceMode

# ---- protobuf wire format --------------------------------------------------


def varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def enc(fields):
    """fields: (number, value) pairs; value str/bytes (length-delimited),
    bool/int (varint), list of pairs (an embedded message); None is left out."""
    out = bytearray()
    for num, val in fields:
        if val is None:
            continue
        if isinstance(val, bool) or isinstance(val, int):
            out += varint(num << 3) + varint(int(val))
            continue
        if isinstance(val, str):
            val = val.encode()
        elif isinstance(val, list):
            val = enc(val)
        out += varint(num << 3 | 2) + varint(len(val)) + val
    return bytes(out)


def emap(num, d):
    """a map<string, string> field: one entry message per key"""
    return [(num, [(1, k), (2, v)]) for k, v in sorted(d.items())]


def dec(buf):
    """{number: [value, ...]}: ints for varints, bytes for length-delimited"""
    out, i = {}, 0
    while i < len(buf):
        key, i = _uvarint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            val, i = _uvarint(buf, i)
        elif wt == 2:
            n, i = _uvarint(buf, i)
            val, i = buf[i:i + n], i + n
        elif wt == 1:
            val, i = buf[i:i + 8], i + 8
        elif wt == 5:
            val, i = buf[i:i + 4], i + 4
        else:
            raise ValueError("protobuf wire type %d" % wt)
        out.setdefault(num, []).append(val)
    return out


def _uvarint(buf, i):
    n = shift = 0
    while True:
        b = buf[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, i


def one(msg, num, default=b""):
    return msg.get(num, [default])[0]


def text(msg, num):
    return one(msg, num).decode()


def dmap(msg, num):
    out = {}
    for entry in msg.get(num, []):
        e = dec(entry)
        out[text(e, 1)] = text(e, 2)
    return out

# ---- the kubelet's messages -------------------------------------------------


def pod_config(pod):
    """PodSandboxConfig of pod POD (namespace "default", uid from the name),
    as the kubelet builds it for a hostNetwork pod: its own cgroup under
    /kubepods, logs in /var/log/pods/NS_NAME_UID, the cluster's DNS server
    (here 127.0.0.1: the node has no resolv.conf of its own)"""
    uid = "uid-" + pod
    return [
        (1, [(1, pod), (2, uid), (3, "default"), (4, 0)]),
        (3, "/var/log/pods/default_%s_%s" % (pod, uid)),
        (4, [(1, "127.0.0.1")]),
        (8, [(1, "/kubepods/pod" + uid),
             (2, [(1, [(1, NODE), (2, CONTAINER), (3, 0)])])]),
    ] + emap(6, {"io.kubernetes.pod.name": pod, "io.kubernetes.pod.namespace": "default",
                 "io.kubernetes.pod.uid": uid})


def container_config(pod, image, name, opts):
    mounts = []
    for m in opts["mount"]:
        p = m.split(":")
        mounts.append((7, [(1, p[1]), (2, p[0]), (3, len(p) > 2 and p[2] == "ro")]))
    envs = [(6, [(1, e.split("=", 1)[0]), (2, e.split("=", 1)[1])]) for e in opts["env"]]
    ann = dict(a.split("=", 1) for a in opts["annotation"])
    ann.update({"io.kubernetes.container.name": name, "io.kubernetes.pod.name": pod})
    return ([(1, [(1, name), (2, 0)]), (2, [(1, image), (18, image)])] +
            [(4, a) for a in opts["args"]] + envs + mounts +
            emap(9, {"io.kubernetes.container.name": name, "io.kubernetes.pod.name": pod,
                     "io.kubernetes.pod.namespace": "default"}) +
            emap(10, ann) +
            [(11, name + "/0.log")] +
            [(17, [(1, d)]) for d in opts["cdi"]])

# ---- calls ------------------------------------------------------------------


class Cri:
    def __init__(self, sock, timeout):
        self.chan = grpc.insecure_channel("unix://" + sock)
        self.timeout = timeout

    def call(self, method, fields):
        path = (IMAGE if method in ("PullImage", "RemoveImage") else RUNTIME) + method
        fn = self.chan.unary_unary(path, request_serializer=None, response_deserializer=None)
        try:
            return dec(fn(enc(fields), timeout=self.timeout))
        except grpc.RpcError as e:
            details = (e.details() or "").replace("\n", " ")
            print("cri: %s: %s: %s" % (method, e.code().name, details), file=sys.stderr)
            sys.exit(1)


def parse_create(args):
    opts = {"cdi": [], "mount": [], "annotation": [], "env": [], "args": []}
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            opts["args"] = args[i + 1:]
            break
        if not a.startswith("--") or a[2:] not in opts or i + 1 >= len(args):
            raise SystemExit("cri: create: bad argument %r" % a)
        opts[a[2:]].append(args[i + 1])
        i += 2
    return opts


def main(argv):
    sock, timeout = "/run/containerd/containerd.sock", 300.0
    while argv and argv[0].startswith("--"):
        if argv[0] == "--sock":
            sock = argv[1]
        elif argv[0] == "--timeout":
            timeout = float(argv[1])
        else:
            raise SystemExit("cri: unknown option " + argv[0])
        argv = argv[2:]
    if not argv:
        raise SystemExit(__doc__)
    c, cmd, a = Cri(sock, timeout), argv[0], argv[1:]
    if cmd == "version":
        r = c.call("Version", [(1, "v1")])
        print(text(r, 2), text(r, 3), text(r, 4))
    elif cmd == "pull":
        print(text(c.call("PullImage", [(1, [(1, a[0])])]), 1))
    elif cmd == "rmi":
        c.call("RemoveImage", [(1, [(1, a[0])])])
    elif cmd == "runp":
        print(text(c.call("RunPodSandbox", [(1, pod_config(a[0])), (2, a[1] if len(a) > 1 else None)]), 1))
    elif cmd == "create":
        pod_id, pod, image, name = a[:4]
        r = c.call("CreateContainer", [(1, pod_id), (2, container_config(pod, image, name, parse_create(a[4:]))),
                                       (3, pod_config(pod))])
        print(text(r, 1))
    elif cmd == "start":
        c.call("StartContainer", [(1, a[0])])
    elif cmd == "stop":
        c.call("StopContainer", [(1, a[0]), (2, 0)])
    elif cmd == "rm":
        c.call("RemoveContainer", [(1, a[0])])
    elif cmd == "status":
        r = c.call("ContainerStatus", [(1, a[0]), (2, True)])
        st = dec(one(r, 1))
        info = dmap(r, 2).get("info", "{}")
        print(STATES[one(st, 3, 0)], json.loads(info).get("pid", 0), text(st, 9))
    elif cmd == "checkpoint":
        c.call("CheckpointContainer", [(1, a[0]), (2, a[1]), (3, int(timeout))])
    elif cmd == "stopp":
        c.call("StopPodSandbox", [(1, a[0])])
    elif cmd == "rmp":
        c.call("RemovePodSandbox", [(1, a[0])])
    elif cmd == "ps":
        for ctr in c.call("ListContainers", []).get(1, []):
            m = dec(ctr)
            print(text(m, 1), text(m, 2), text(dec(one(m, 3)), 1), STATES[one(m, 6, 0)])
    elif cmd == "pods":
        for pod in c.call("ListPodSandbox", []).get(1, []):
            m = dec(pod)
            print(text(m, 1), text(dec(one(m, 2)), 1), POD_STATES[one(m, 3, 0)])
    else:
        raise SystemExit("cri: unknown command " + cmd)


if __name__ == "__main__":
    main(sys.argv[1:])
