#!/usr/bin/env python3
"""Writes the fuzz targets' seed inputs, taken from the specification's JSON files.

    python3 Fuzz/seeds.py Specs OUT      # OUT/request, OUT/response, OUT/gzip, ...

request, response: each protocol vector step's request and expected response (compact
JSON, the wire format). gzip: those bodies gzip'd, after the control byte of
Fuzz/Harness/GzipTarget.swift. schema: every schema in the vectors and Specs/schemas.
merge: every merge vector (a merge document). linemerge: the ancestor, local and remote of
every text-strategy field of the merge vectors, after the control byte of
Fuzz/Harness/LineMergeTarget.swift. live: an event stream (ready, a keep-alive, changes
carrying the expected response, poke) per protocol vector step, after the three control
bytes of Fuzz/Harness/LiveTarget.swift (limit 1 MiB, cut in the middle). Seeds longer than the fuzzer's -max_len (4096 bytes)
are left out: the two edit-budget vectors, whose case the line merge's small budgets reach.
"""
import glob
import gzip
import hashlib
import json
import os
import sys

MAX_LEN = 4096


def live_stream(response, revision):
    """What GET /sync/events sends around a change set (LiveEvent.serverSentEvent's text)."""
    revision = revision if isinstance(revision, int) and revision > 0 else 1
    text = (b"event: ready\nid: %d\ndata: %d\n\n: keep-alive\n\n" % (revision - 1, revision - 1)
            + b"event: changes\nid: %d\ndata: %d\ndata: " % (revision, revision - 1) + response + b"\n\n"
            + b"event: poke\nid: %d\ndata: %d\n\n" % (revision + 1, revision + 1))
    cut = len(text) // 2
    return bytes([0x03, cut >> 8 & 0xFF, cut & 0xFF]) + text


def main(specs, out):
    seeds = {name: [] for name in ("request", "response", "gzip", "schema", "merge", "linemerge", "live")}

    def compact(value):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()

    for path in sorted(glob.glob(os.path.join(specs, "conformance", "protocol", "*.json"))):
        vector = json.load(open(path, encoding="utf-8"))
        seeds["schema"].append(compact(vector["schema"]))
        for step in vector["steps"]:
            body = compact(step["request"])
            seeds["request"].append(body)
            if "expected" in step:
                seeds["response"].append(compact(step["expected"]))
                seeds["live"].append(live_stream(compact(step["expected"]), step["expected"].get("maxRevision", 0)))
            for control in (0x07, 0x4D):  # limit 1 MB at level 1, limit 4096 at level 9
                seeds["gzip"].append(bytes([control]) + gzip.compress(body, mtime=0))
    for path in sorted(glob.glob(os.path.join(specs, "conformance", "schema", "*.json"))):
        vector = json.load(open(path, encoding="utf-8"))
        for key in ("old", "new", "schema"):
            if isinstance(vector.get(key), dict):
                seeds["schema"].append(compact(vector[key]))
    for path in sorted(glob.glob(os.path.join(specs, "schemas", "*.json"))):
        seeds["schema"].append(compact(json.load(open(path, encoding="utf-8"))))
    for path in sorted(glob.glob(os.path.join(specs, "conformance", "merge", "*.json"))):
        vector = json.load(open(path, encoding="utf-8"))
        seeds["merge"].append(compact(vector))
        seeds["schema"].append(compact(vector["schema"]))
        entity = next(e for e in vector["schema"]["entities"] if e["name"] == vector["entity"])
        for field in entity["fields"]:
            if field.get("strategy", entity.get("defaultStrategy")) != "text":
                continue
            texts = []
            for side in ("ancestor", "local", "remote"):
                record = vector.get(side) or {}
                value = (record.get("values") or {}).get(field["name"])
                texts.append((value if isinstance(value, str) else "").encode())
            seeds["linemerge"].append(b"\x00" + b"\x00".join(texts))

    for name, inputs in seeds.items():
        # Fuzz/run passes -max_len=4096: a longer seed would be cut (no longer JSON) and slow.
        inputs[:] = [data for data in inputs if len(data) <= MAX_LEN]
        folder = os.path.join(out, name)
        os.makedirs(folder, exist_ok=True)
        for data in inputs:
            with open(os.path.join(folder, hashlib.sha1(data).hexdigest()), "wb") as f:
                f.write(data)
        if not inputs:
            sys.exit(f"seeds: no {name} seeds found under {specs}")
    print("seeds: " + ", ".join(f"{len(set(v))} {k}" for k, v in seeds.items()), file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
