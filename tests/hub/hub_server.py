#!/usr/bin/env python3
"""A local stand-in for the Hugging Face Hub, for tests (docs/hub.md "Testing").

Serves model repos from folders with the Hub's HTTP API as huggingface_hub uses it:
  GET /api/models?search=TEXT&limit=N[&full=true][&config=true]    search
  GET /api/models/{repo}[/revision/{rev}]                           model info
  GET /api/models/{repo}/tree/{rev}[/{path}]?recursive=true         file tree, paginated with
                                                                    Link: <...>; rel="next"
  GET /{repo}/resolve/{rev}/{path}                                  a file: non-LFS files are
      served here (ETag = the git blob id); LFS files answer 302 to the second origin (the "CDN",
      another port), which serves the bytes with its own ETag and Range support.
Search answers as the Hub does: with expand[]=FIELD... only those fields (plus id/_id), else with
full=true/config=true the siblings/config, else the short default set.
Start: hub_server.py --repo owner/name=FOLDER [--repo ...] [--tls CERT KEY] [--page-size N]
       [--log FILE] [--throttle BYTES_PER_S]
--log appends one JSON line per request ({"origin": "api"|"cdn", "path": ..., "range": ...}), so
tests can check what was asked for (e.g. no weight file before config.json was judged).
It prints one line "HUB <endpoint> CDN <cdn origin>" on stdout when both listen, then serves until
killed. A file is LFS when it ends in .safetensors/.bin/.gguf or is larger than --lfs-threshold.
Per-repo settings come from FOLDER/_hub.json (not served): {"gated": true, "tags": [...],
"downloads": N, "likes": N, "pipeline_tag": "...", "library_name": "...", "behaviour": {...}};
behaviours (file-serving faults for the download tests) are applied in FileServer:
  "behaviour": {KEY: VALUE, ..., "files": {"path/in/repo": {KEY: VALUE, ...}}}
the repo-level keys apply to every file, a file's own keys override them. Counts are per file
(requests for that file's bytes; for 429, requests to its resolve URL):
  "drops": {"count": N, "seed": S}   the first N byte responses are cut (the connection closed)
                                     at a random offset of the bytes being sent (seeded by S, the
                                     path and the request's number)
  "ignore_range": true               always 200 with the whole file (Range and If-Range ignored)
  "changed": true                    the first response serves another version of the file (same
                                     size, other bytes, ETag "old-...") and is cut after half of
                                     it; later responses serve the real file with its real ETag,
                                     so a resume with If-Range: "old-..." gets a 200
  "wrong_range": true                a Range request gets a 206 for the whole file
                                     (Content-Range: bytes 0-...), not for the bytes asked
  "gzip": true                       the whole file gzip-compressed (Content-Encoding: gzip),
                                     whatever the request's Accept-Encoding
  "wrong_hash": true                 the bytes served differ from those the tree's hashes describe
                                     (same size: the last byte is flipped)
  "retry_after": {"count": N, "seconds": S, "status": 429}
                                     the first N resolve requests answer STATUS (429, or e.g. 503)
                                     with Retry-After: S
  "stall": {"count": N, "after": B, "seconds": S}
                                     the first N byte responses send B bytes, then nothing for S
                                     seconds, then close the connection
  "throttle": BYTES_PER_SECOND       every byte response is paced to this rate
--throttle BYTES_PER_SECOND sets "throttle" for every repo that does not set it.
Control (hub origin, for tests): GET /_colibri/stats -> {"bytes_sent": {"repo/path": n},
"requests": {"repo/path": n}, "total_bytes_sent": n}; GET /_colibri/reset zeroes the counters
(stats and behaviour counts).
"""
import argparse
import gzip
import hashlib
import json
import os
import random
import socket
import ssl
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LFS_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt", ".pth")


class RepoFile:
    def __init__(self, root, rel, lfs_threshold):
        self.path = rel
        self.full = os.path.join(root, rel)
        data = open(self.full, "rb").read()
        self.size = len(data)
        self.lfs = rel.endswith(LFS_SUFFIXES) or self.size > lfs_threshold
        self.sha256 = hashlib.sha256(data).hexdigest() if self.lfs else None
        # As on the Hub, an LFS file's git blob is its pointer file, not its content.
        self.pointer = ("version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n"
                        % (self.sha256, self.size)).encode() if self.lfs else None
        blob = self.pointer if self.lfs else data
        self.blob = hashlib.sha1(b"blob %d\0" % len(blob) + blob).hexdigest()

    def tree_entry(self):
        e = {"type": "file", "oid": self.blob, "size": self.size, "path": self.path}
        if self.lfs:
            e["lfs"] = {"oid": self.sha256, "size": self.size, "pointerSize": len(self.pointer)}
        return e


class Repo:
    def __init__(self, repo_id, folder, lfs_threshold):
        self.id = repo_id
        self.folder = folder
        meta_path = os.path.join(folder, "_hub.json")
        self.meta = json.load(open(meta_path)) if os.path.exists(meta_path) else {}
        self.behaviour = self.meta.get("behaviour", {})
        self.files = {}
        for dirpath, _, names in os.walk(folder):
            for n in sorted(names):
                rel = os.path.relpath(os.path.join(dirpath, n), folder).replace(os.sep, "/")
                if rel == "_hub.json":
                    continue
                self.files[rel] = RepoFile(folder, rel, lfs_threshold)
        self.commit = hashlib.sha1(("commit:" + repo_id).encode()).hexdigest()
        self.config = None
        if "config.json" in self.files:
            try:
                self.config = json.load(open(self.files["config.json"].full))
            except ValueError:
                self.config = None

    def info(self, full=True, config=True):
        d = {"_id": hashlib.md5(self.id.encode()).hexdigest()[:24], "id": self.id,
             "modelId": self.id, "sha": self.commit, "private": False,
             "gated": "manual" if self.meta.get("gated") else False,
             "disabled": False, "lastModified": "2026-11-30T12:00:00.000Z",
             "tags": self.meta.get("tags", []), "downloads": self.meta.get("downloads", 0),
             "likes": self.meta.get("likes", 0),
             "pipeline_tag": self.meta.get("pipeline_tag", "text-generation"),
             "library_name": self.meta.get("library_name", "transformers")}
        if full:
            d["siblings"] = [{"rfilename": p} for p in sorted(self.files)]
        if config and self.config is not None:
            d["config"] = {k: self.config[k] for k in ("architectures", "model_type")
                           if k in self.config}
        if "parameters" in self.meta:
            d["safetensors"] = {"parameters": {"BF16": self.meta["parameters"]},
                                "total": self.meta["parameters"]}
        return d


class Hub:
    def __init__(self, args):
        self.repos = {}
        for spec in args.repo:
            repo_id, folder = spec.split("=", 1)
            self.repos[repo_id] = Repo(repo_id, folder, args.lfs_threshold)
        self.page_size = args.page_size
        self.token = args.token
        self.cdn_origin = None
        self.lock = threading.Lock()
        self.counters = {}  # (kind, repo, path) -> requests seen, for behaviours
        self.bytes_sent = {}  # "repo/path" -> file bytes written to sockets
        self.throttle = args.throttle
        self.log_path = args.log

    def log(self, entry):
        """One JSON line per request in --log (tests count what was asked, e.g. no weights)."""
        if not self.log_path:
            return
        with self.lock:
            with open(self.log_path, "a") as f:
                f.write(json.dumps(entry) + "\n")

    def count(self, key):
        with self.lock:
            self.counters[key] = self.counters.get(key, 0) + 1
            return self.counters[key]

    def add_sent(self, name, n):
        with self.lock:
            self.bytes_sent[name] = self.bytes_sent.get(name, 0) + n

    def stats(self):
        with self.lock:
            requests = {}
            for (kind, repo, path), n in self.counters.items():
                if kind == "bytes":
                    requests[repo + "/" + path] = n
            return {"bytes_sent": dict(self.bytes_sent), "requests": requests,
                    "total_bytes_sent": sum(self.bytes_sent.values())}

    def reset(self):
        with self.lock:
            self.counters.clear()
            self.bytes_sent.clear()

    def behaviour(self, repo, path):
        b = {k: v for k, v in repo.behaviour.items() if k != "files"}
        b.update(repo.behaviour.get("files", {}).get(path, {}))
        if "throttle" not in b and self.throttle:
            b["throttle"] = self.throttle
        return b


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    hub = None  # set on the class made per server
    is_cdn = False

    def log_message(self, fmt, *args):  # quiet: tests read stdout
        pass

    def send_json(self, status, obj, extra=None):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def error(self, status, message, code=None, extra_headers=None):
        extra = dict(extra_headers or {})
        extra["X-Error-Message"] = message
        if code:
            extra["X-Error-Code"] = code
        self.send_json(status, {"error": message}, extra)

    def authorised(self, repo):
        if not repo.meta.get("gated"):
            return True
        return self.headers.get("Authorization") == "Bearer " + (self.hub.token or "\0")

    def do_GET(self):
        try:
            url = urllib.parse.urlsplit(self.path)
            query = urllib.parse.parse_qs(url.query)
            path = urllib.parse.unquote(url.path)
            self.hub.log({"origin": "cdn" if self.is_cdn else "api", "path": self.path,
                          "range": self.headers.get("Range")})
            if self.is_cdn:
                return FileServer(self).serve_cdn(path, query)
            if path == "/_colibri/stats":
                return self.send_json(200, self.hub.stats())
            if path == "/_colibri/reset":
                self.hub.reset()
                return self.send_json(200, {"reset": True})
            if path == "/api/models":
                return self.search(query)
            if path.startswith("/api/models/"):
                return self.api_model(path[len("/api/models/"):], query)
            parts = path.lstrip("/").split("/")
            if len(parts) >= 5 and parts[2] == "resolve":
                repo = self.hub.repos.get(parts[0] + "/" + parts[1])
                if repo is None:
                    return self.error(404, "Repository not found", "RepoNotFound")
                return FileServer(self).serve_resolve(repo, parts[3], "/".join(parts[4:]))
            return self.error(404, "not found")
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.close_connection = True

    def search(self, query):
        text = query.get("search", [""])[0].lower()
        limit = int(query.get("limit", ["20"])[0])
        full = query.get("full", ["false"])[0].lower() == "true"
        config = query.get("config", ["false"])[0].lower() == "true"
        expand = query.get("expand[]", []) + query.get("expand", [])
        if expand and (full or config):
            return self.error(400, "expand cannot be combined with full or config")
        found = [r for r in self.hub.repos.values() if text in r.id.lower()]
        found.sort(key=lambda r: (-r.meta.get("downloads", 0), r.id))
        out = []
        for r in found[:limit]:
            d = r.info(True, True)
            if expand:
                keep = set(expand) | {"id", "_id"}
            elif full or config:
                keep = set(d) - ({"siblings"} if not full else set()) - \
                    ({"config"} if not config else set()) - {"safetensors"}
            else:  # the Hub's short default answer
                keep = {"_id", "id", "modelId", "likes", "downloads", "private", "tags",
                        "pipeline_tag", "library_name", "createdAt"}
            out.append({k: v for k, v in d.items() if k in keep})
        self.send_json(200, out)

    def find_repo(self, rest):
        # rest: owner/name[/revision/REV | /tree/REV[/path]]
        parts = rest.split("/")
        if len(parts) < 2:
            return None, None
        return self.hub.repos.get(parts[0] + "/" + parts[1]), parts[2:]

    def revision_ok(self, repo, rev):
        return rev in ("main", repo.commit)

    def api_model(self, rest, query):
        repo, tail = self.find_repo(rest)
        if repo is None:
            return self.error(404, "Repository not found", "RepoNotFound")
        if not tail:
            return self.send_json(200, repo.info())
        if tail[0] == "revision" and len(tail) >= 2:
            rev = "/".join(tail[1:])
            if not self.revision_ok(repo, rev):
                return self.error(404, "Invalid rev id: " + rev, "RevisionNotFound")
            return self.send_json(200, repo.info())
        if tail[0] == "tree" and len(tail) >= 2:
            rev = tail[1]
            if not self.revision_ok(repo, rev):
                return self.error(404, "Invalid rev id: " + rev, "RevisionNotFound")
            return self.tree(repo, rev, "/".join(tail[2:]), query)
        return self.error(404, "not found")

    def tree(self, repo, rev, prefix, query):
        recursive = query.get("recursive", ["false"])[0].lower() == "true"
        entries, dirs = [], set()
        for p in sorted(repo.files):
            if prefix and not p.startswith(prefix.rstrip("/") + "/"):
                continue
            rel = p[len(prefix.rstrip("/")) + 1:] if prefix else p
            if "/" in rel and not recursive:
                d = (prefix.rstrip("/") + "/" if prefix else "") + rel.split("/")[0]
                if d not in dirs:
                    dirs.add(d)
                    entries.append({"type": "directory", "oid": "0" * 40, "size": 0, "path": d})
                continue
            if recursive and "/" in rel:  # the Hub lists the folders too
                segs = p.split("/")
                for i in range(1, len(segs)):
                    d = "/".join(segs[:i])
                    if d not in dirs:
                        dirs.add(d)
                        entries.append({"type": "directory", "oid": "0" * 40, "size": 0,
                                        "path": d})
            entries.append(repo.files[p].tree_entry())
        cursor = int(query.get("cursor", ["0"])[0])
        page = entries[cursor:cursor + self.hub.page_size]
        extra = {}
        if cursor + self.hub.page_size < len(entries):
            q = dict((k, v[0]) for k, v in query.items())
            q["cursor"] = str(cursor + self.hub.page_size)
            nxt = "%s/api/models/%s/tree/%s%s?%s" % (
                self.server.origin, repo.id, rev, ("/" + prefix) if prefix else "",
                urllib.parse.urlencode(q))
            extra["Link"] = '<%s>; rel="next"' % nxt
        self.send_json(200, page, extra)


class FileServer:
    """Serves file bytes: Range / If-Range / ETag, and the faults a repo's behaviour asks for."""

    CHUNK = 64 << 10

    def __init__(self, handler):
        self.h = handler
        self.hub = handler.hub

    def serve_resolve(self, repo, rev, path):
        if not self.h.revision_ok(repo, rev):
            return self.h.error(404, "Invalid rev id: " + rev, "RevisionNotFound")
        f = repo.files.get(path)
        if f is None:
            return self.h.error(404, "Entry not found", "EntryNotFound")
        if not self.h.authorised(repo):
            return self.h.error(401, "Access to model %s is restricted. You must have access to "
                                     "it and be authenticated to access it." % repo.id, "GatedRepo")
        b = self.hub.behaviour(repo, path)
        n = self.hub.count(("resolve", repo.id, path))
        ra = b.get("retry_after")
        if ra and n <= ra.get("count", 1):
            return self.h.error(ra.get("status", 429), "slow down (test server)", extra_headers={
                "Retry-After": str(ra.get("seconds", 1))})
        common = {"X-Repo-Commit": repo.commit}
        if f.lfs:
            token = urllib.parse.quote(repo.id + "/" + path)
            location = "%s/lfs/%s?file=%s" % (self.hub.cdn_origin, f.sha256, token)
            self.h.send_response(302)
            self.h.send_header("Location", location)
            self.h.send_header("X-Linked-Etag", '"%s"' % f.sha256)
            self.h.send_header("X-Linked-Size", str(f.size))
            for k, v in common.items():
                self.h.send_header(k, v)
            self.h.send_header("Content-Length", "0")
            self.h.end_headers()
            return
        self.send_bytes(repo, f, '"%s"' % f.blob, common)

    def serve_cdn(self, path, query):
        # /lfs/<sha256>?file=<repo/path>: the CDN never sees the token (the client must not send it)
        name = urllib.parse.unquote(query.get("file", [""])[0])
        for repo in self.hub.repos.values():
            if name.startswith(repo.id + "/"):
                f = repo.files.get(name[len(repo.id) + 1:])
                if f is not None and f.lfs and path == "/lfs/" + f.sha256:
                    if self.h.headers.get("Authorization"):
                        return self.h.error(400, "the CDN got an Authorization header")
                    return self.send_bytes(repo, f, '"cdn-%s"' % f.sha256[:16], {})
        return self.h.error(404, "no such object")

    def send_bytes(self, repo, f, etag, extra):
        b = self.hub.behaviour(repo, f.path)
        n = self.hub.count(("bytes", repo.id, f.path))
        data = open(f.full, "rb").read()
        cut = None  # close the connection after this many body bytes
        if b.get("wrong_hash") and data:
            data = data[:-1] + bytes([data[-1] ^ 0xFF])
        if b.get("changed") and n == 1:
            data = bytes(x ^ 0x5A for x in data)
            etag = '"old-%s"' % etag.strip('"')[:16]
            cut = len(data) // 2
        start, status = 0, 200
        rng = self.h.headers.get("Range")
        if_range = self.h.headers.get("If-Range")
        if (rng and rng.startswith("bytes=") and not b.get("ignore_range")
                and (if_range is None or if_range == etag)):
            first = rng[len("bytes="):].split("-")[0]
            if first.isdigit() and int(first) <= len(data):
                start, status = int(first), 206
        if status == 206 and b.get("wrong_range"):
            start = 0  # a 206 for the whole file: its Content-Range does not continue the client's
        body = data[start:]
        drops = b.get("drops")
        if drops and n <= drops.get("count", 1) and len(body) > 1:
            rnd = random.Random("%s:%s:%d" % (drops.get("seed", 0), f.path, n))
            cut = rnd.randrange(1, len(body))
        stall = b.get("stall")
        stalling = stall and n <= stall.get("count", 1)
        if stalling:
            cut = min(len(body), stall.get("after", 0))
        if b.get("gzip"):  # ignores Accept-Encoding: identity
            body, status, cut = gzip.compress(data), 200, None
            extra = dict(extra, **{"Content-Encoding": "gzip"})
        self.h.send_response(status)
        self.h.send_header("ETag", etag)
        self.h.send_header("Accept-Ranges", "bytes")
        self.h.send_header("Content-Length", str(len(body)))
        if status == 206:
            self.h.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        for k, v in extra.items():
            self.h.send_header(k, v)
        self.h.end_headers()
        limit = len(body) if cut is None else cut
        rate = b.get("throttle")
        began = time.monotonic()
        sent = 0
        try:
            while sent < limit:
                piece = body[sent:min(limit, sent + self.CHUNK)]
                self.h.wfile.write(piece)
                sent += len(piece)
                self.hub.add_sent(repo.id + "/" + f.path, len(piece))
                if rate:
                    ahead = sent / float(rate) - (time.monotonic() - began)
                    if ahead > 0:
                        time.sleep(ahead)
            self.h.wfile.flush()
            if stalling:
                time.sleep(stall.get("seconds", 5))
        finally:
            if cut is not None:
                self.drop()

    def drop(self):
        """Closes the connection mid-body (the client sees fewer bytes than Content-Length)."""
        self.h.close_connection = True
        try:
            self.h.wfile.flush()
            self.h.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        # Clients that drop connections or refuse the certificate are what the tests do.
        if not isinstance(sys.exc_info()[1], (OSError, ssl.SSLError)):
            super().handle_error(request, client_address)


def make_server(hub, is_cdn, tls):
    handler = type("H", (Handler,), {"hub": hub, "is_cdn": is_cdn})
    server = QuietServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    scheme = "http"
    if tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(tls[0], tls[1])
        # The handshake runs in the connection's thread (on its first read), not in accept():
        # a client that refuses the certificate must not hold up the others.
        server.socket = ctx.wrap_socket(server.socket, server_side=True,
                                        do_handshake_on_connect=False)
        scheme = "https"
    server.origin = "%s://127.0.0.1:%d" % (scheme, server.server_address[1])
    return server


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--repo", action="append", default=[], help="owner/name=FOLDER")
    ap.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    ap.add_argument("--page-size", type=int, default=50)
    ap.add_argument("--lfs-threshold", type=int, default=10 << 20)
    ap.add_argument("--token", default=None, help="the token gated repos accept")
    ap.add_argument("--log", default=None, help="append a JSON line per request")
    ap.add_argument("--throttle", type=int, default=0,
                    help="bytes/s for every file response (a repo's behaviour may override)")
    args = ap.parse_args()
    hub = Hub(args)
    api = make_server(hub, False, args.tls)
    cdn = make_server(hub, True, args.tls)
    hub.cdn_origin = cdn.origin
    for s in (api, cdn):
        threading.Thread(target=s.serve_forever, daemon=True).start()
    print("HUB %s CDN %s" % (api.origin, cdn.origin), flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
