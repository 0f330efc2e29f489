#!/usr/bin/env python3
"""Writes samples/prompts/stories-calib.jsonl and stories-heldout.jsonl: short
children's-story openings for the llama2.c TinyStories model
(samples/model/stories260K). Deterministic (random.Random(0)); the two sets
share no opening. The sentences are made here from the templates below."""

import json
import os
import random
import sys

NAMES = ["Lily", "Tom", "Mia", "Ben", "Sue", "Max", "Anna", "Sam", "Lucy", "Jack", "Emma", "Tim",
         "Zoe", "Leo", "Kate", "Bob", "Amy", "Joe", "Ella", "Dan"]
KINDS = ["little girl", "little boy", "small dog", "big cat", "tiny bird", "happy frog", "kind bear",
         "curious fox", "shy bunny", "brave duck"]
PLACES = ["the park", "the garden", "the forest", "the beach", "a small town", "the big house",
          "the farm", "the school", "the zoo", "a quiet village"]
THINGS = ["a red ball", "a shiny stone", "a blue kite", "a big box", "a funny hat", "a little boat",
          "a yellow flower", "a old key", "a soft toy", "a tall tree"]
FEELINGS = ["happy", "sad", "scared", "excited", "angry", "tired", "proud", "surprised"]

TEMPLATES = [
    "Once upon a time, there was a {kind} named {name}.",
    "Once upon a time, in {place}, there lived a {kind}.",
    "One day, {name} went to {place} and found {thing}.",
    "{name} was very {feeling} because",
    "One sunny day, {name} and {name2} went to {place}.",
    "{name} had {thing}. Every day, {name} liked to",
    "There was a {kind} who lived in {place}. The {kind} wanted to",
    "Once upon a time, {name} saw {thing} in {place}.",
    "{name} and {name2} were best friends. One day, they",
    "Mom said to {name}, \"",
]


def openings(rng):
    seen = set()
    out = []
    while len(out) < 160:
        t = rng.choice(TEMPLATES)
        name, name2 = rng.sample(NAMES, 2)
        s = t.format(name=name, name2=name2, kind=rng.choice(KINDS), place=rng.choice(PLACES),
                     thing=rng.choice(THINGS).replace("a old", "an old"), feeling=rng.choice(FEELINGS))
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    texts = openings(random.Random(0))
    for part, chunk, tag in (("calib", texts[:120], "c"), ("heldout", texts[120:], "h")):
        path = os.path.join(root, "samples", "prompts", f"stories-{part}.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            for i, p in enumerate(chunk, 1):
                f.write(json.dumps({"id": f"stories-{tag}-{i:03d}", "prompt": p}) + "\n")
        print(path, len(chunk))


if __name__ == "__main__":
    main()
