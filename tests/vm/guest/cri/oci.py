#!/usr/bin/python3
"""OCI images built offline, and a read-only registry that serves them.

  oci.py image DIR ROOTFS TAG [-- ENTRYPOINT...]
      an OCI image layout in DIR: one uncompressed layer (ROOTFS as a tar),
      its config (ENTRYPOINT, PATH), the manifest, index.json naming it TAG
  oci.py checkpoint DIR ARCHIVE TAG CONTAINER POD
      a checkpoint image of a CRI CheckpointContainer ARCHIVE, as
      `checkpointctl build` describes one: the archive (an uncompressed tar of
      checkpoint/, config.dump, spec.dump, status.dump, ...) as the one layer,
      an image index whose annotations name it a checkpoint
      (org.criu.checkpoint.container.name, ...: containerd reads them on the
      index, CRI-O on the manifest; both carry them), pointing at the manifest
  oci.py serve PORT NAME=DIR...
      the Docker registry API v2 (GET/HEAD /v2/, /v2/NAME/manifests/TAG|DIGEST,
      /v2/NAME/blobs/DIGEST) over plain HTTP on 127.0.0.1:PORT, for the layouts
      DIR under repository NAME; containerd pulls from a localhost registry
      over HTTP without configuration. Prints "serving" when it listens.
"""
import hashlib
import http.server
import io
import json
import os
import sys
import tarfile

INDEX = "application/vnd.oci.image.index.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
CONFIG = "application/vnd.oci.image.config.v1+json"
LAYER = "application/vnd.oci.image.layer.v1.tar"
PLATFORM = {"architecture": "amd64", "os": "linux"}


def put_blob(layout, data, media):
    d = hashlib.sha256(data).hexdigest()
    os.makedirs(os.path.join(layout, "blobs", "sha256"), exist_ok=True)
    with open(os.path.join(layout, "blobs", "sha256", d), "wb") as f:
        f.write(data)
    return {"mediaType": media, "digest": "sha256:" + d, "size": len(data)}


def put_json(layout, obj, media):
    return put_blob(layout, json.dumps(obj, sort_keys=True).encode(), media)


def write_layout(layout, layer, tag, config, annotations=None):
    """the layout with one layer; the tag names an index holding annotations
    when there are any, else the manifest itself"""
    lay = put_blob(layout, layer, LAYER)
    config = dict(config, rootfs={"type": "layers", "diff_ids": [lay["digest"]]}, **PLATFORM)
    man = {"schemaVersion": 2, "mediaType": MANIFEST, "config": put_json(layout, config, CONFIG),
           "layers": [lay]}
    if annotations:
        man["annotations"] = annotations
    top = dict(put_json(layout, man, MANIFEST), platform=PLATFORM)
    if annotations:
        idx = {"schemaVersion": 2, "mediaType": INDEX, "manifests": [top], "annotations": annotations}
        top = put_json(layout, idx, INDEX)
    top["annotations"] = {"org.opencontainers.image.ref.name": tag}
    with open(os.path.join(layout, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)
    with open(os.path.join(layout, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "mediaType": INDEX, "manifests": [top]}, f)
    print(top["digest"])


def rootfs_tar(root):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name in sorted(os.listdir(root)):
            t.add(os.path.join(root, name), arcname=name)
    return buf.getvalue()


def cmd_image(layout, root, tag, entry):
    config = {"config": {"Env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"], "Entrypoint": entry or None}}
    write_layout(layout, rootfs_tar(root), tag, config)


def cmd_checkpoint(layout, archive, tag, container, pod):
    with open(archive, "rb") as f:
        layer = f.read()
    with tarfile.open(fileobj=io.BytesIO(layer)) as t:
        names = [n for n in t.getnames() if n.lstrip("./") == "config.dump"]
        if not names:
            raise SystemExit("oci.py: %s holds no config.dump: not a CRI checkpoint archive" % archive)
        cfg = json.load(t.extractfile(names[0]))
    ann = {
        "org.criu.checkpoint.container.name": container,
        "org.criu.checkpoint.pod.name": pod,
        "org.criu.checkpoint.pod.namespace": "default",
        "org.criu.checkpoint.engine.name": "containerd",
        "org.criu.checkpoint.runtime.name": cfg.get("runtime_name", cfg.get("ociRuntime", "")),
        "org.criu.checkpoint.rootfsImageName": cfg.get("rootfsImageName", ""),
        "org.criu.checkpoint.rootfsImageRef": cfg.get("rootfsImageRef", ""),
    }
    write_layout(layout, layer, tag, {"config": {}}, ann)


class Registry(http.server.BaseHTTPRequestHandler):
    repos = {}

    def log_message(self, fmt, *args):
        sys.stderr.write("registry: " + fmt % args + "\n")

    def send(self, code, body=b"", media="application/json", digest=None):
        self.send_response(code)
        self.send_header("Content-Type", media)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Docker-Distribution-API-Version", "registry/2.0")
        if digest:
            self.send_header("Docker-Content-Digest", digest)
        self.end_headers()
        if self.command == "GET":
            self.wfile.write(body)

    def blob(self, layout, digest):
        p = os.path.join(layout, "blobs", *digest.split(":", 1))
        if "/" in digest or not os.path.isfile(p):
            return None
        with open(p, "rb") as f:
            return f.read()

    def do_GET(self):
        parts = self.path.split("?")[0].strip("/").split("/")
        if parts == ["v2"]:
            return self.send(200, b"{}")
        if len(parts) < 4 or parts[0] != "v2" or parts[-2] not in ("manifests", "blobs"):
            return self.send(404)
        layout = self.repos.get("/".join(parts[1:-2]))
        if layout is None:
            return self.send(404)
        ref, media = parts[-1], "application/octet-stream"
        if parts[-2] == "manifests":
            with open(os.path.join(layout, "index.json")) as f:
                for m in json.load(f)["manifests"]:
                    if ref in (m["digest"], m.get("annotations", {}).get("org.opencontainers.image.ref.name")):
                        ref, media = m["digest"], m["mediaType"]
                        break
            if not ref.startswith("sha256:"):
                return self.send(404)
            if media == "application/octet-stream":
                body = self.blob(layout, ref)
                media = json.loads(body).get("mediaType", MANIFEST) if body else media
        body = self.blob(layout, ref)
        if body is None:
            return self.send(404)
        return self.send(200, body, media, ref)

    do_HEAD = do_GET


def cmd_serve(port, pairs):
    Registry.repos = dict(p.split("=", 1) for p in pairs)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", int(port)), Registry)
    print("serving", flush=True)
    srv.serve_forever()


def main(a):
    if len(a) >= 4 and a[0] == "image":
        cmd_image(a[1], a[2], a[3], a[5:] if len(a) > 4 and a[4] == "--" else [])
    elif len(a) == 6 and a[0] == "checkpoint":
        cmd_checkpoint(*a[1:])
    elif len(a) >= 3 and a[0] == "serve":
        cmd_serve(a[1], a[2:])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
