#!/usr/bin/python3
"""Validates the topic probe's prompt sets (resources/topics/*.json, format in its README).

  check_topics.py TOKENIZER_JSON FILE...   validates each file; exit 1 naming every problem
  check_topics.py TOKENIZER_JSON --self-test FILE
                                           breaks copies of FILE in known ways and checks that
                                           each copy is rejected for the right reason

Rules: the format header, unique topic ids, every topic's source listed in "sources" (with
package, version, licence and files), at least 20 prompts and 2,000 tokens per topic (counted
with the default model's tokenizer), no empty or duplicate prompts, no prompt over 400 tokens
(the model's context is 512), valid UTF-8; a set named "general" has at least 10 topics.
"""
import copy
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "train"))
from tokenizer import Tokenizer  # noqa: E402

MIN_PROMPTS = 20
MIN_TOKENS = 2000
MAX_PROMPT_TOKENS = 400
MIN_GENERAL_TOPICS = 10


def problems(path, tok):
    """Every problem of the file at `path`, as plain sentences naming the file."""
    out = []
    try:
        with open(path, "rb") as f:
            raw = f.read()
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        return [f"{path}: cannot read as UTF-8 ({e})"]
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        return [f"{path}: not valid JSON ({e})"]
    if not isinstance(data, dict):
        return [f"{path}: the top level is not an object"]
    if data.get("format") != "colibri-topics" or data.get("version") != 1:
        out.append(f"{path}: format must be \"colibri-topics\" version 1")
    for key in ("name", "description"):
        if not isinstance(data.get(key), str) or not data.get(key):
            out.append(f"{path}: \"{key}\" must be a non-empty string")
    sources = data.get("sources")
    topics = data.get("topics")
    if not isinstance(sources, list) or not isinstance(topics, list):
        return out + [f"{path}: \"topics\" and \"sources\" must be lists"]
    source_ids = set()
    for s in sources:
        sid = s.get("id") if isinstance(s, dict) else None
        if not isinstance(sid, str) or not sid:
            out.append(f"{path}: a source has no id")
            continue
        if sid in source_ids:
            out.append(f"{path}: source id {sid!r} is listed twice")
        source_ids.add(sid)
        for key in ("package", "version", "licence", "files"):
            if not isinstance(s.get(key), str) or not s.get(key):
                out.append(f"{path}: source {sid!r} has no {key}")
    ids = set()
    for i, t in enumerate(topics):
        if not isinstance(t, dict) or not isinstance(t.get("id"), str) or not t.get("id"):
            out.append(f"{path}: topic {i} has no id")
            continue
        tid = t["id"]
        where = f"{path}: topic {tid!r}"
        if tid in ids:
            out.append(f"{where}: the id is used twice")
        ids.add(tid)
        if not isinstance(t.get("label"), str) or not t.get("label"):
            out.append(f"{where}: no label")
        if t.get("source") not in source_ids:
            out.append(f"{where}: its source {t.get('source')!r} is not listed in \"sources\"")
        prompts = t.get("prompts")
        if not isinstance(prompts, list) or not all(isinstance(p, str) for p in prompts):
            out.append(f"{where}: \"prompts\" must be a list of strings")
            continue
        seen = set()
        tokens = 0
        for j, p in enumerate(prompts):
            if not p.strip():
                out.append(f"{where}: prompt {j} is empty")
            if p in seen:
                out.append(f"{where}: prompt {j} repeats an earlier one")
            seen.add(p)
            n = len(tok.encode(p))
            if n > MAX_PROMPT_TOKENS:
                out.append(f"{where}: prompt {j} has {n} tokens, more than {MAX_PROMPT_TOKENS}")
            tokens += n
        if len(prompts) < MIN_PROMPTS:
            out.append(f"{where}: {len(prompts)} prompts, fewer than {MIN_PROMPTS}")
        if tokens < MIN_TOKENS:
            out.append(f"{where}: {tokens} tokens, fewer than {MIN_TOKENS}")
    if data.get("name") == "general" and len(topics) < MIN_GENERAL_TOPICS:
        out.append(f"{path}: {len(topics)} topics, fewer than {MIN_GENERAL_TOPICS}")
    return out


def self_test(path, tok):
    """Each broken copy must be rejected with a message containing the expected words."""
    with open(path, encoding="utf-8") as f:
        good = json.load(f)
    t0 = good["topics"][0]

    def edit(fn):
        d = copy.deepcopy(good)
        fn(d)
        return json.dumps(d, ensure_ascii=False).encode("utf-8")

    cases = [
        ("format", edit(lambda d: d.update(format="other"))),
        ("used twice", edit(lambda d: d["topics"].append(copy.deepcopy(d["topics"][0])))),
        ("not listed", edit(lambda d: d["topics"][0].update(source="no-such-source"))),
        ("fewer than 20", edit(lambda d: d["topics"][0].update(prompts=t0["prompts"][:19]))),
        ("tokens, fewer than", edit(lambda d: d["topics"][0].update(
            prompts=[f"word {i} and" for i in range(30)]))),
        ("is empty", edit(lambda d: d["topics"][0]["prompts"].append("  \n"))),
        ("repeats", edit(lambda d: d["topics"][0]["prompts"].append(t0["prompts"][0]))),
        ("more than 400", edit(lambda d: d["topics"][0]["prompts"].append("lantern " * 500))),
        ("has no licence", edit(lambda d: d["sources"][0].pop("licence"))),
        ("topics, fewer than 10", edit(lambda d: d.update(name="general",
                                                           topics=d["topics"][:9]))),
        ("UTF-8", edit(lambda d: None).replace(b"{", b"{\xff", 1)),
        ("JSON", b"{\"format\": "),
    ]
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for expect, raw in cases:
            p = os.path.join(tmp, "broken.json")
            with open(p, "wb") as f:
                f.write(raw)
            found = problems(p, tok)
            if not any(expect in m for m in found):
                print(f"self-test: a copy broken for {expect!r} was not rejected so: {found}")
                failed += 1
    ok = problems(path, tok)
    if ok:
        print("self-test: the unbroken file has problems:", *ok, sep="\n  ")
        failed += 1
    print(f"self-test: {len(cases) - failed} of {len(cases)} broken copies rejected")
    return failed == 0


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    tok = Tokenizer(sys.argv[1])
    if sys.argv[2] == "--self-test":
        return 0 if self_test(sys.argv[3], tok) else 1
    bad = 0
    for path in sys.argv[2:]:
        found = problems(path, tok)
        for m in found:
            print(m)
        bad += len(found)
        if not found:
            with open(path, encoding="utf-8") as f:
                d = json.load(f)
            print(f"{path}: ok, {len(d['topics'])} topics")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
