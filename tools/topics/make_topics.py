#!/usr/bin/python3
"""Makes the topic probe's prompt sets (resources/topics/*.json) from Debian 12 packages.

Two sets (format in resources/topics/README.md):
  default-model  the default model's seven training domains, taken ONLY from the held-out split
                 of its training data (tools/train/prepare_data.py: documents whose seeded hash
                 falls under 2 %), so the probe measures routing on text the model never saw;
  general        twelve topics (code, mathematics, law, poetry, medicine, Chinese, German, SQL,
                 ...) for other models.

Packages are fetched with `apt-get download` and unpacked with `dpkg-deb -x` into --work (no root
needed, nothing installed). Everything is deterministic: documents are visited in the order of a
seeded hash of their key, and the same packages give the same bytes.

Usage: /usr/bin/python3 tools/topics/make_topics.py [--work DIR] [--out DIR] [--set NAME]
"""
import argparse
import glob
import gzip
import hashlib
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tools", "train"))
import prepare_data  # noqa: E402  (the default model's extractors and held-out rule)
from tokenizer import Tokenizer  # noqa: E402

TOKENIZER = os.path.join(REPO, "resources", "models", "colibri-moe-tiny", "tokenizer.json")
SEED = "colibri-topics-1"  # order in which documents are visited
MAX_PROMPT_TOKENS = 200  # longer documents give their leading passage (the model's context: 512)
MIN_PROMPT_TOKENS = 20  # shorter documents say too little about a topic
TARGET_TOKENS = 4500  # per topic; stop once reached with at least MIN_PROMPTS prompts
MIN_PROMPTS = 25
MAX_PROMPTS = 60

# Licence of the TEXT we take, as read in each package's copyright file.
LICENCES = dict(prepare_data.LICENCES)
LICENCES.update({
    "fortunes-zh": "GPL-3+ (Tang and Song poems, themselves centuries old)",
    "pari-doc": "GPL-2+ (PARI/GP documentation, The PARI Group)",
    "base-files": "Verbatim copying permitted by each licence text; the texts are quoted "
                  "unmodified (FSF, Apache Software Foundation, Mozilla Foundation, Creative "
                  "Commons, Perl Foundation)",
    "postgresql-15": "PostgreSQL Licence (BSD-style)",
    "libcurl4-doc": "curl licence (MIT/X style)",
    "bash-completion": "GPL-2+",
})


# ----------------------------------------------------------------------------- packages

class Package:
    """A Debian package downloaded and unpacked under WORK/root/<name>."""

    def __init__(self, work, name):
        self.name = name
        debs = os.path.join(work, "debs")
        os.makedirs(debs, exist_ok=True)
        found = sorted(glob.glob(os.path.join(debs, f"{name}_*.deb")))
        if not found:
            subprocess.run(["apt-get", "download", name], cwd=debs, check=True,
                           stdout=subprocess.DEVNULL)
            found = sorted(glob.glob(os.path.join(debs, f"{name}_*.deb")))
        if len(found) != 1:
            sys.exit(f"make_topics: expected one {name}_*.deb in {debs}, found {found}")
        self.deb = found[0]
        self.version = subprocess.run(["dpkg-deb", "-f", self.deb, "Version"], check=True,
                                      capture_output=True, text=True).stdout.strip()
        self.root = os.path.join(work, "root", name)
        if not os.path.isdir(self.root):
            tmp = self.root + ".part"
            subprocess.run(["rm", "-rf", tmp], check=True)
            os.makedirs(tmp)
            subprocess.run(["dpkg-deb", "-x", self.deb, tmp], check=True)
            os.rename(tmp, self.root)

    def path(self, p):
        return os.path.join(self.root, p.lstrip("/"))


class Packages:
    def __init__(self, work):
        self.work = work
        self.cache = {}

    def __getitem__(self, name):
        if name not in self.cache:
            self.cache[name] = Package(self.work, name)
        return self.cache[name]


# ----------------------------------------------------------------------------- prompts

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def clean(text):
    return prepare_data.clean(ANSI.sub("", text)).strip("\n")


def leading_passage(tok, text, limit):
    """The longest prefix of whole lines with at most `limit` tokens (whole words if the first
    line alone is longer)."""
    if len(tok.encode(text)) <= limit:
        return text
    lines = text.split("\n")
    lo, hi = 0, len(lines)  # lines[:lo] fits
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if len(tok.encode("\n".join(lines[:mid]))) <= limit:
            lo = mid
        else:
            hi = mid - 1
    if lo > 0:
        return "\n".join(lines[:lo]).rstrip()
    words = lines[0].split(" ")
    lo, hi = 0, len(words)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if len(tok.encode(" ".join(words[:mid]))) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return " ".join(words[:lo]).rstrip()


def order_key(topic, key):
    return hashlib.sha256(f"{SEED}\0{topic}\0{key}".encode()).digest()


def passages(tok, text, limit):
    """Consecutive passages of whole lines of at most `limit` tokens each (the first is the
    leading passage); a line longer than `limit` is cut at words."""
    rest = text
    while rest.strip():
        p = leading_passage(tok, rest, limit)
        if not p.strip():  # a single word longer than the limit
            break
        yield p
        rest = rest[len(p):].lstrip("\n")


def select(tok, topic, docs):
    """docs: iterable of (key, text). Visits them in seeded-hash order and takes each document's
    leading passage (the whole document when short), until the topic has TARGET_TOKENS tokens and
    MIN_PROMPTS prompts (or MAX_PROMPTS). When the documents run out first (a few long ones),
    further rounds take each document's next passage."""
    docs = sorted(docs, key=lambda kv: order_key(topic, kv[0]))
    split = [passages(tok, clean(text), MAX_PROMPT_TOKENS) for _, text in docs]
    prompts, seen, tokens = [], set(), 0
    while split:
        alive = []
        for it in split:
            text = next(it, None)
            if text is None:
                continue
            alive.append(it)
            n = len(tok.encode(text))
            if n < MIN_PROMPT_TOKENS or text in seen:
                continue
            seen.add(text)
            prompts.append(text)
            tokens += n
            if (tokens >= TARGET_TOKENS and len(prompts) >= MIN_PROMPTS) or \
                    len(prompts) >= MAX_PROMPTS:
                return prompts
        split = alive
    return prompts


# ----------------------------------------------------------------------------- documents

def fortune_entries(path):
    for key, text in prepare_data.fortune_docs(os.path.dirname(path)):
        if key.split(":")[0] == os.path.basename(path):
            yield key, text


def chunks(key, text, tok, limit=MAX_PROMPT_TOKENS, keep=lambda p: True):
    """Consecutive blank-line separated paragraphs grouped up to `limit` tokens (whole
    paragraphs; a longer paragraph stands alone and is cut later). Yields (key:i, text)."""
    paras = [p.strip("\n") for p in re.split(r"\n[ \t]*\n", text) if p.strip() and keep(p)]
    cur, n, i = [], 0, 0
    for p in paras:
        m = len(tok.encode(p))
        if cur and n + m > limit:
            yield f"{key}:{i}", "\n\n".join(cur)
            cur, n, i = [], 0, i + 1
        cur.append(p)
        n += m
    if cur:
        yield f"{key}:{i}", "\n\n".join(cur)


def files(root, pattern):
    return sorted(glob.glob(os.path.join(root, pattern), recursive=True))


# ----------------------------------------------------------------------------- default-model set

DEFAULT_TOPICS = [
    # id, label, package, extractor(pkg) -> docs, files description
    ("kjv_en", "King James Bible", "bible-kjv-text"),
    ("fortunes_en", "English fortunes", "fortunes"),
    ("fortunes_de", "German fortunes", "fortunes-de"),
    ("fortunes_es", "Spanish fortunes", "fortunes-es"),
    ("dict_en", "English dictionary (GCIDE)", "dict-gcide"),
    ("pydoc", "Python documentation", "python3.11-doc"),
    ("pycode", "Python source", "libpython3.11-stdlib"),
]


def kjv_docs(pk):
    """prepare_data.kjv_docs, with the unpacked reader and data file."""
    reader = pk["bible-kjv"]
    data = pk["bible-kjv-text"]
    yield from prepare_data.kjv_docs(
        [reader.path("/usr/bin/bible"), "-p", data.path("/usr/lib")])


def links_skipped(root, extractor):
    """The extractor's documents, without the files that are symbolic links."""
    saved = prepare_data.read_text
    prepare_data.read_text = lambda p: "" if os.path.islink(p) else saved(p)
    try:
        yield from ((k, t) for k, t in extractor() if t)
    finally:
        prepare_data.read_text = saved


def default_docs(pk, topic):
    """(docs, files) of a default-model domain, as prepare_data extracts them."""
    pd = prepare_data
    if topic == "kjv_en":
        return kjv_docs(pk), "bible -f Gen1:1-Rev22:21 (bible-kjv 4.38 reader over /usr/lib/bible.data)"
    if topic == "fortunes_en":
        d = pk["fortunes"].path(pd.FORTUNE_DIR)
        return pd.fortune_docs(d, skip={"ascii-art"}), pd.FORTUNE_DIR + "/* (without ascii-art)"
    if topic == "fortunes_de":
        d = pk["fortunes-de"].path(pd.FORTUNE_DIR + "/de")
        return pd.fortune_docs(d, skip={"asciiart"}), pd.FORTUNE_DIR + "/de/* (without asciiart)"
    if topic == "fortunes_es":
        return pd.fortune_docs(pk["fortunes-es"].path(pd.FORTUNE_DIR + "/es")), \
            pd.FORTUNE_DIR + "/es/*"
    if topic == "dict_en":
        pd.DICTD_DIR = pk["dict-gcide"].path("/usr/share/dictd")
        return pd.dictd_docs("gcide"), "/usr/share/dictd/gcide.dict.dz (one entry per document)"
    if topic == "pydoc":
        pd.PYDOC_DIR = pk["python3.11-doc"].path("/usr/share/doc/python3.11/html/_sources")
        return pd.pydoc_docs(), "/usr/share/doc/python3.11/html/_sources/**/*.rst.txt"
    if topic == "pycode":
        pd.STDLIB_DIR = pk["libpython3.11-stdlib"].path("/usr/lib/python3.11")
        # Links into other packages (_sysconfigdata) dangle in the unpacked tree.
        return ((k, t) for k, t in links_skipped(pd.STDLIB_DIR, pd.pycode_docs)), "/usr/lib/python3.11/**/*.py (without tests)"
    raise KeyError(topic)


def make_default(pk, tok):
    with open(os.path.join(REPO, "tools", "train", "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    seed, frac = manifest["seed"], manifest["heldout_frac"]
    topics, sources = [], []
    for tid, label, pkg in DEFAULT_TOPICS:
        docs, where = default_docs(pk, tid)
        held = [(k, t) for k, t in docs if prepare_data.held_out(seed, tid, k, frac)]
        trained = {s["package"]: s["version"] for s in manifest["domains"][tid]["sources"]}
        if trained.get(pkg) != pk[pkg].version:
            print(f"warning: {pkg} {pk[pkg].version} differs from the trained {trained.get(pkg)}",
                  file=sys.stderr)
        prompts = select(tok, tid, held)
        topics.append({"id": tid, "label": label, "source": pkg, "prompts": prompts})
        sources.append(source_entry(pk, pk[pkg], f"{where}; held-out split only ({len(held)} "
                                               f"documents: seed {seed}, fraction {frac})"))
        report(tok, tid, prompts)
    return {"format": "colibri-topics", "version": 1, "name": "default-model",
            "description": "The default model's seven training domains, from the held-out split "
                           "of its training data only (text it was not trained on). Whole "
                           "documents, or their leading passage of at most "
                           f"{MAX_PROMPT_TOKENS} tokens.",
            "topics": topics, "sources": sources}


# ----------------------------------------------------------------------------- general set

def general_topics(pk, tok):
    """[(id, label, package, files, docs)] in a fixed order."""
    F = "/usr/share/games/fortunes"
    out = []

    d = pk["libcurl4-doc"].path("/usr/share/doc/libcurl4/examples")
    def c_docs(d=d):  # d bound now: the generators run later
        for p in files(d, "*.c"):
            text = prepare_data.read_text(p)
            text = re.sub(r"\A\s*/\*.*?\*/\s*", "", text, flags=re.S)  # the licence header
            yield os.path.basename(p), text
    out.append(("c_code", "C source", "libcurl4-doc",
                "/usr/share/doc/libcurl4/examples/*.c (licence header comment removed)", c_docs()))

    d = pk["libpython3.11-stdlib"].path("/usr/lib/python3.11")
    def py_docs(d=d):  # d bound now: the generators run later
        for p in files(d, "*.py") + files(d, "*/*.py"):
            if "/test" not in p and not os.path.islink(p):
                yield os.path.relpath(p, d), prepare_data.read_text(p)
    out.append(("python_code", "Python source", "libpython3.11-stdlib",
                "/usr/lib/python3.11/*.py and */*.py (without tests)", py_docs()))

    d = pk["bash-completion"].path("/usr/share/bash-completion/completions")
    def sh_docs(d=d):  # d bound now: the generators run later
        for p in files(d, "*"):
            if os.path.isfile(p) and not os.path.islink(p):
                yield os.path.basename(p), prepare_data.read_text(p)
    out.append(("shell", "Shell scripts (bash)", "bash-completion",
                "/usr/share/bash-completion/completions/*", sh_docs()))

    d = pk["postgresql-15"].path("/usr/share/postgresql/15/extension")
    def sql_docs(d=d):  # d bound now: the generators run later
        for p in files(d, "*.sql"):
            text = prepare_data.read_text(p)
            text = re.sub(r"\A/\*.*?\*/\s*", "", text, flags=re.S)  # the file name comment
            # The two guard lines every extension script starts with.
            text = re.sub(r"^-- complain if script is sourced.*\n(\\echo .*\n)?", "", text,
                          flags=re.M).lstrip("\n")
            yield os.path.basename(p), text
    out.append(("sql", "SQL", "postgresql-15",
                "/usr/share/postgresql/15/extension/*.sql (extension scripts, without their "
                "header comment and psql guard lines)", sql_docs()))

    d = pk["pari-doc"].path("/usr/share/pari/doc")
    def math_docs(d=d):  # d bound now: the generators run later
        for p in [os.path.join(d, f"usersch{i}.tex") for i in (1, 2, 3, 4)]:
            # Paragraphs with formulas: at least three inline $...$ pairs.
            yield from chunks(os.path.basename(p), prepare_data.read_text(p), tok,
                              keep=lambda para: para.count("$") >= 6)
    out.append(("mathematics", "Mathematics (TeX)", "pari-doc",
                "/usr/share/pari/doc/usersch[1-4].tex (paragraphs with formulas)", math_docs()))

    d = pk["base-files"].path("/usr/share/common-licenses")
    names = ["Apache-2.0", "Artistic", "CC0-1.0", "GFDL-1.3", "GPL-3", "LGPL-2.1", "MPL-2.0"]
    def law_docs(d=d, names=names):
        for n in names:
            yield from chunks(n, prepare_data.read_text(os.path.join(d, n)), tok)
    out.append(("law", "Law (licence texts)", "base-files",
                "/usr/share/common-licenses/{" + ",".join(names) + "}", law_docs()))

    def poem_docs():
        for k, t in fortune_entries(pk["fortunes"].path(F + "/songs-poems")):
            if t.count("\n") >= 3:  # four lines or more
                yield k, t
    out.append(("poetry_en", "English poetry and songs", "fortunes",
                F + "/songs-poems (entries of four lines or more)", poem_docs()))

    pd = prepare_data
    pd.DICTD_DIR = pk["dict-gcide"].path("/usr/share/dictd")
    med = re.compile(r"\((?:Med|Anat|Pathol|Physiol|Surg|Pharm)\.\)")
    def med_docs():
        for k, t in pd.dictd_docs("gcide"):
            # The tag in the first sense (before its source mark): the entry is medical, not
            # just one of its later senses.
            first = re.split(r"\[(?:1913 Webster|WordNet|PJC|Century)", t, maxsplit=1)[0]
            if med.search(first) and len(t) >= 200:
                yield k, t
    out.append(("medicine", "Medicine (dictionary entries)", "dict-gcide",
                "/usr/share/dictd/gcide.dict.dz (entries whose first sense is tagged Med., Anat., "
                "Pathol., Physiol., Surg. or Pharm.)", med_docs()))

    def zh_docs():
        for n in ("tang300", "song100"):
            yield from fortune_entries(pk["fortunes-zh"].path(F + "/" + n))
    out.append(("chinese", "Chinese (Tang and Song poems)", "fortunes-zh",
                F + "/{tang300,song100} (colour escapes removed)", zh_docs()))

    out.append(("german", "German", "fortunes-de", F + "/de/* (without asciiart)",
                pd.fortune_docs(pk["fortunes-de"].path(F + "/de"), skip={"asciiart"})))
    out.append(("spanish", "Spanish", "fortunes-es", F + "/es/*",
                pd.fortune_docs(pk["fortunes-es"].path(F + "/es"))))
    out.append(("scripture_en", "English scripture (King James Bible)", "bible-kjv-text",
                "bible -f Gen1:1-Rev22:21 (bible-kjv reader), one chapter per document",
                kjv_docs(pk)))
    return out


def make_general(pk, tok):
    topics, sources = [], {}
    for tid, label, pkg, where, docs in general_topics(pk, tok):
        prompts = select(tok, tid, docs)
        assert pkg not in sources, f"{pkg}: one topic per package, so its id names the source"
        topics.append({"id": tid, "label": label, "source": pkg, "prompts": prompts})
        sources[pkg] = source_entry(pk, pk[pkg], where)
        report(tok, tid, prompts)
    return {"format": "colibri-topics", "version": 1, "name": "general",
            "description": "General topics for models other than the default one: source code, "
                           "mathematics, law, poetry, medicine and several languages, from Debian "
                           "12 packages. Whole documents or paragraphs, or their leading passage "
                           f"of at most {MAX_PROMPT_TOKENS} tokens.",
            "topics": topics, "sources": list(sources.values())}


# ----------------------------------------------------------------------------- output

def copyright_file(pk, p):
    """The package's copyright file; Debian links some doc directories to a sibling package's
    (libpython3.11-stdlib -> libpython3.11-minimal), whose file we then read."""
    doc = p.path(f"/usr/share/doc/{p.name}")
    if os.path.islink(doc):
        other = pk[os.path.basename(os.readlink(doc))]
        return other.path(f"/usr/share/doc/{other.name}/copyright")
    return os.path.join(doc, "copyright")


def source_entry(pk, p, files_desc):
    cp = copyright_file(pk, p)
    with open(cp, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    return {"id": p.name, "package": p.name, "version": p.version,
            "licence": LICENCES[p.name], "files": files_desc,
            "copyright_sha256": sha}


def report(tok, tid, prompts):
    n = sum(len(tok.encode(p)) for p in prompts)
    b = sum(len(p.encode("utf-8")) for p in prompts)
    print(f"{tid:14s} {len(prompts):3d} prompts {n:6d} tokens {b:7d} bytes", flush=True)


def write(path, data):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("wrote", path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default="/tmp/colibri-topics",
                    help="where packages are downloaded and unpacked")
    ap.add_argument("--out", default=os.path.join(REPO, "resources", "topics"))
    ap.add_argument("--set", choices=["default-model", "general", "all"], default="all")
    a = ap.parse_args()
    tok = Tokenizer(TOKENIZER)
    pk = Packages(a.work)
    os.makedirs(a.out, exist_ok=True)
    if a.set in ("default-model", "all"):
        write(os.path.join(a.out, "default-model.json"), make_default(pk, tok))
    if a.set in ("general", "all"):
        write(os.path.join(a.out, "general.json"), make_general(pk, tok))


if __name__ == "__main__":
    main()
