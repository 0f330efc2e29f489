#!/usr/bin/env python3
"""Validate the sample text assets under samples/.

Prompts (samples/prompts/*.jsonl):
  * UTF-8, one JSON object per line, LF line endings, final newline;
  * each object has exactly the string fields "id" and "prompt", non-empty;
  * ids are unique across all prompt files;
  * no prompt appears in both the calib and the held-out file of a set.

Corpus (samples/corpus/brown-*.txt):
  * UTF-8, blocks "# doc <id> <category>" followed by non-empty lines,
    one blank line between blocks, final newline;
  * document ids are unique across the splits and no tagged tokens
    (word/tag) remain.

Usage: check_samples.py [SAMPLES_DIR]   (default: samples/ of the repository)
Exit status 0 when everything is valid; problems are listed on stderr.
"""

from __future__ import annotations

import glob
import json
import os
import re
import sys

HEADER_RE = re.compile(r"^# doc (c[a-r][0-9]{2}) ([a-z_]+)$")
# A Brown tag left behind, e.g. "jury/nn" or "said/vbd".
TAGGED_RE = re.compile(r"\b[A-Za-z]+/(?:at|nn|nns|np|vbd|vbz|vbn|in|cc|jj|rb|pps|ppss)(?:-tl|-hl)?\b")


def read_text(path: str, errors: list[str]) -> str | None:
    with open(path, "rb") as fh:
        data = fh.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        errors.append(f"{path}: not valid UTF-8 ({e})")
        return None
    if "\r" in text:
        errors.append(f"{path}: contains CR characters")
    if text and not text.endswith("\n"):
        errors.append(f"{path}: no final newline")
    return text


def check_prompts(prompt_dir: str, errors: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    seen_ids: dict[str, str] = {}
    by_file: dict[str, set[str]] = {}
    for path in sorted(glob.glob(os.path.join(prompt_dir, "*.jsonl"))):
        text = read_text(path, errors)
        if text is None:
            continue
        prompts: set[str] = set()
        n = 0
        for lineno, line in enumerate(text.split("\n")[:-1], 1):
            where = f"{path}:{lineno}"
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                errors.append(f"{where}: invalid JSON ({e})")
                continue
            if not isinstance(obj, dict) or set(obj) != {"id", "prompt"}:
                errors.append(f"{where}: expected exactly the fields id and prompt")
                continue
            pid, prompt = obj["id"], obj["prompt"]
            if not isinstance(pid, str) or not pid.strip():
                errors.append(f"{where}: id must be a non-empty string")
                continue
            if not isinstance(prompt, str) or not prompt.strip():
                errors.append(f"{where}: prompt must be a non-empty string")
                continue
            if pid in seen_ids:
                errors.append(f"{where}: duplicate id {pid} (first in {seen_ids[pid]})")
            seen_ids[pid] = where
            norm = " ".join(prompt.split()).lower()
            if norm in prompts:
                errors.append(f"{where}: duplicate prompt within file")
            prompts.add(norm)
            n += 1
        counts[os.path.basename(path)] = n
        by_file[os.path.basename(path)] = prompts
    for name, prompts in by_file.items():
        if "-calib." in name:
            other = name.replace("-calib.", "-heldout.")
            overlap = prompts & by_file.get(other, set())
            for p in sorted(overlap):
                errors.append(f"{name} and {other} share the prompt: {p[:60]}")
    return counts


def check_corpus(corpus_dir: str, errors: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    seen: dict[str, str] = {}
    for path in sorted(glob.glob(os.path.join(corpus_dir, "brown-*.txt"))):
        text = read_text(path, errors)
        if text is None:
            continue
        ndocs = 0
        for bi, block in enumerate(text.rstrip("\n").split("\n\n")):
            lines = block.split("\n")
            m = HEADER_RE.match(lines[0])
            if not m:
                errors.append(f"{path}: block {bi + 1} does not start with '# doc <id> <category>'")
                continue
            doc = m.group(1)
            if doc in seen:
                errors.append(f"{path}: document {doc} also in {seen[doc]}")
            seen[doc] = path
            body = lines[1:]
            if not body or any(not ln.strip() for ln in body):
                errors.append(f"{path}: document {doc} has an empty body or empty lines")
            for ln in body:
                if TAGGED_RE.search(ln):
                    errors.append(f"{path}: document {doc} still has tagged tokens: {ln[:60]}")
                    break
            ndocs += 1
        counts[os.path.basename(path)] = ndocs
    return counts


def main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    samples = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "..", "samples")
    errors: list[str] = []
    pc = check_prompts(os.path.join(samples, "prompts"), errors)
    cc = check_corpus(os.path.join(samples, "corpus"), errors)
    for name, n in sorted(pc.items()):
        print(f"prompts/{name}: {n} prompts")
    for name, n in sorted(cc.items()):
        print(f"corpus/{name}: {n} documents")
    for e in errors:
        print("error:", e, file=sys.stderr)
    if not pc or not cc:
        print("error: no prompt or corpus files found", file=sys.stderr)
        return 1
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
