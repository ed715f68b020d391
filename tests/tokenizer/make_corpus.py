#!/usr/bin/env python3
"""Writes corpus.json: the strings the tokenizer is checked on against Hugging Face's JS
implementation (tests/tokenizer/npm/make_reference.mjs) and our C++ (test_tokenizer_npm.cpp).

Entries are {"text": str} or, for input that is not valid UTF-8 (JSON strings cannot hold it),
{"bytes": [int, ...]}. The C++ side encodes the raw bytes (the tokenizer replaces invalid
sequences by U+FFFD itself); the JS side is given the string that WHATWG's TextDecoder makes of
the bytes (the same U+FFFD replacement). Run: python3 tests/tokenizer/make_corpus.py
"""
import json
import os

T = []


def text(*items):
    T.extend({"text": s} for s in items)


def raw(*items):
    T.extend({"bytes": list(b)} for b in items)


# English prose, contractions (the (?i:'s|'t|...) alternative), punctuation.
text(
    "Hello world",
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "I don't think it's going to rain; they've said we'll be fine.",
    "I'M SURE HE'LL COME, DON'T YOU THINK? THEY'RE LATE.",
    "She said: \"Yes.\" He replied, 'No!'",
    "It's 5 o'clock somewhere.",
    "rock 'n' roll",
    "'s 't 're 've 'm 'll 'd",
    "'S 'T 'RE 'VE 'M 'LL 'D",
    "Mixture-of-Experts models route each token to a few experts.",
    "e.g., i.e., etc. -- and so on...",
    "Well... that was unexpected!?",
    "A sentence with a semicolon; another with a colon: done.",
    "Title Case Words In A Row",
    "ALLCAPSWORDWITHOUTSPACES",
    "supercalifragilisticexpialidocious",
    "antidisestablishmentarianism is a long word",
    "The year 1984 was a novel by George Orwell.",
    "Email me at someone@example.com or visit https://example.org/path?q=1&r=2#frag",
    "Markdown: **bold**, _italic_, `code`, [link](http://x.y)",
    "# Heading\n\n- item one\n- item two\n\n1. first\n2. second",
    "Q: What is 2+2?\nA: 4.",
    "The cost was $1,234.56 (approx. 1.1k EUR).",
    "50% off -- today only!!!",
    "C'est la vie, n'est-ce pas?",
    "O'Reilly's book",
    "Don't stop believin'",
    "user\u2019s right single quotation mark",
    "dash\u2014em and \u2013en",
    "ellipsis\u2026 and \u00abguillemets\u00bb",
)
with open("/usr/share/common-licenses/Apache-2.0", encoding="utf-8") if os.path.exists(
        "/usr/share/common-licenses/Apache-2.0") else open(__file__, encoding="utf-8") as f:
    paragraph = f.read()[:1500]
text(paragraph)
# Long multi-line text with runs of spaces (Llama's tokenizer has no pre-tokenizer: BPE sees it whole).
text("First paragraph.  Two spaces after a period.\n\nSecond  paragraph with   runs of  spaces,\ttabs"
     " and trailing spaces   \n   and leading ones.\n" * 20)

# CJK and other scripts.
text(
    "你好，世界！",
    "我们今天去公园散步吧。",
    "深度学习模型的推理速度很重要。",
    "混合专家模型（MoE）在每一层选择少数专家。",
    "日本語のテキストです。",
    "東京は日本の首都です。カタカナとひらがな。",
    "こんにちは、元気ですか？",
    "한국어 문장입니다.",
    "안녕하세요 세계",
    "中文English混合text测试",
    "数字123和汉字混合456",
    "繁體中文測試：臺灣",
    "𠀋𠂉𡃁 (CJK Extension B)",
    "Русский текст: Привет, мир!",
    "Ελληνικά: Καλημέρα κόσμε",
    "ไทย: สวัสดีครับ",
    "हिन्दी: नमस्ते दुनिया",
    "Tiếng Việt có dấu",
    "ქართული ენა",
    "Ⅻ Roman numeral twelve, ⅻ small",
)

# Emoji, including ZWJ sequences, flags, skin tones, keycaps, variation selectors.
text(
    "😀",
    "I love 🍕 and 🍣!",
    "👨‍👩‍👧‍👦 family",
    "👩🏽‍💻 technologist",
    "🏳️‍🌈 flag",
    "🇺🇸🇯🇵🇩🇪",
    "👍🏻👍🏼👍🏽👍🏾👍🏿",
    "1️⃣ 2️⃣ #️⃣",
    "❤️ vs ❤",
    "🧑‍🤝‍🧑",
    "😀😃😄😁😆😅😂🤣",
    "emoji at end 🎉",
    "🎉 emoji at start",
    "a😀b😀c",
    "🫠🫥🫶 newer emoji",
    "☕️☕︎",
    "👁️‍🗨️",
    "🐻‍❄️ polar bear",
    "   😀   ",
    "😀\n😀",
)

# Code.
text(
    "int main() { return 0; }",
    "#include <vector>\nstd::vector<int> v{1, 2, 3};",
    "def foo(x):\n    return x * 2\n",
    "class A:\n    def __init__(self):\n        self.x = 1\n\n    def f(self):\n        pass\n",
    "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}",
    "if x == 1:\n\tprint('one')\nelif x == 2:\n\tprint(\"two\")",
    "{\"key\": \"value\", \"n\": [1, 2, 3], \"nested\": {\"a\": null}}",
    "<html><body><p class=\"x\">Hi</p></body></html>",
    "SELECT * FROM users WHERE id = 42 AND name LIKE '%bob%';",
    "git commit -m \"fix: handle empty input\" && git push origin main",
    "x = [i**2 for i in range(10) if i % 2 == 0]",
    "const f = async (a, b) => { await g(a ?? b); };",
    "fn main() { let v: Vec<u32> = (0..10).collect(); println!(\"{:?}\", v); }",
    "regex: ^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]{2,}$",
    "a->b->c; p = &q; *p++ = 0;",
    "x+=1;y-=2;z*=3;w/=4;",
    "/* comment */ // line comment\n# shell comment",
    "    indented with four spaces",
    "\t\tindented with two tabs",
    "snake_case_name camelCaseName PascalCaseName SCREAMING_CASE",
    "path/to/file.cpp:123:45: error: expected ';'",
    "0xDEADBEEF 0b1010 0o777 1_000_000",
    "std::unordered_map<std::string, std::vector<int>> m;",
    "```python\nprint('hi')\n```",
    "$ ls -la | grep \"foo\" > out.txt 2>&1",
)

# Whitespace runs: spaces, tabs, newlines, CRLF, trailing and leading spaces, Unicode spaces.
text(
    " ",
    "  ",
    "   ",
    "\t",
    "\n",
    "\r\n",
    "\n\n\n",
    "hello   ",
    "   hello",
    "hello    world",
    "a \t b",
    "line1\nline2\n\nline4",
    "line1\r\nline2\r\n",
    "trailing newline\n",
    "trailing spaces and newline   \n",
    "\n\n  indented after blank lines",
    "tabs\tbetween\twords",
    "mixed \t\n \t\n end",
    " " * 16,
    " " * 300,
    "\n" * 20,
    "word" + " " * 7 + "word",
    "non\u00a0breaking\u00a0space",
    "ideographic\u3000space",
    "thin\u2009space and hair\u200aspace",
    "line\u2028separator and paragraph\u2029separator",
    "next\u0085line",
    "mongolian\u180evowel separator",
    "zero\u200bwidth\u200cnon\u200djoiner",
    "\ufeffBOM at start",
    "form\x0cfeed and vertical\x0btab",
)

# Special tokens next to text (Qwen's chat markup, Llama's <s> </s> <unk>).
text(
    "<|im_start|>user\nhi<|im_end|>",
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "<|endoftext|>",
    "<|endoftext|><|endoftext|>",
    "text<|endoftext|>text",
    " <|im_end|> ",
    "<|im_start|>",
    "<|im_start",
    "<<|im_end|>>",
    "<think>\n\n</think>\n\nAnswer.",
    "<tool_call>{\"name\": \"f\"}</tool_call>",
    "<s>",
    "<s>Hello</s>",
    "<s> Hello </s>",
    "Hello<s>world",
    "</s></s>",
    "<unk>",
    "a<unk>b",
    "<s><s>",
    "<|fim_prefix|>def f():<|fim_suffix|>\n<|fim_middle|>",
    "<|vision_start|><|image_pad|><|vision_end|>",
    "not special: <|imstart|> <im_end>",
)

# Numbers.
text(
    "0",
    "7",
    "42",
    "12345678901234567890",
    "3.14159265358979",
    "-273.15",
    "1,000,000",
    "1e-10 and 6.022e23",
    "2024-06-01T12:34:56Z",
    "+1 (555) 123-4567",
    "v1.2.3-rc.4",
    "٣٤٥ Arabic-Indic digits",
    "१२३ Devanagari digits",
    "①②③ circled, ½ ¾ fractions, ² ³ superscripts",
    "１２３ fullwidth digits",
    "10x faster, 2nd place, 3rd, 4th",
)

# Accents and combining marks (NFC matters for Qwen).
text(
    "café",
    "cafe\u0301",
    "Ångström",
    "A\u030angstro\u0308m",
    "e\u0301\u0301\u0301",
    "naïve Zoë coöperate",
    "ñandú piñata",
    "\u1100\u1161\u11a8 Hangul jamo",
    "Z\u0351\u0352a\u0353\u0354l\u0355\u0356g\u0357o",
    "ǅ ǈ ǋ titlecase digraphs",
    "ﬁ ﬂ ligatures",
    "Å (U+212B ANGSTROM SIGN) and K (KELVIN SIGN)",
    "straße STRASSE",
    "I\u0307 dotted",
    "ſtop long s and 'ſ",
)

# Right-to-left text.
text(
    "مرحبا بالعالم",
    "العربية: هذا نص تجريبي.",
    "שלום עולם",
    "עברית עם מספרים 123 וסימנים!",
    "mixed English and עברית text",
    "English then العربية then English",
    "\u200fRLM mark and \u200eLRM mark",
    "فارسی: سلام دنیا",
    "اردو: ہیلو",
    "\u202eright-to-left override\u202c",
)

# Miscellaneous edge cases.
text(
    "",
    "a",
    "!",
    "!!!???...",
    "~`@#$%^&*()_+-=[]{}|;:,.<>/?",
    "\u2581leading lower one eighth block",
    "a\u2581b literal metaspace",
    "<0x41> looks like a byte token",
    "\u0000nul\u0000",
    "\u0001\u0002\u0003 control chars",
    "\uffff\ufffe noncharacters",
    "\ufffd replacement character",
    "ab" * 500,
    "∀x∈ℝ: x² ≥ 0 ⇒ √(x²) = |x|",
    "→ ← ↑ ↓ ⇐ ⇒",
    "©®™ symbols",
    "((((nested))))",
    "http://a.b/c?d=e&f=g",
    "user@@domain..com",
    "----====____",
)

# Invalid UTF-8 (raw bytes; see the module docstring).
raw(
    b"\xff",
    b"\x80",
    b"abc\xffdef",
    b"\xf0\x9f\x98",             # truncated 4-byte sequence at the end
    b"\xf0\x9f\x98x",            # truncated, then ASCII
    b"\xc0\xaf",                 # overlong encoding
    b"\xed\xa0\x80",             # UTF-16 surrogate
    b"\xf4\x90\x80\x80",         # above U+10FFFF
    b"\xe2\x82",                 # truncated 3-byte sequence
    b"\xe2\x82x\xe2\x82\xac",    # truncated then a valid euro sign
    b"caf\xe9",                  # Latin-1 byte
    b"\xfe\xfe\xff\xff",
    b"<|im_start|>\xff<|im_end|>",
    b"hello \x80\x81\x82 world",
    b"\xf0\x80\x80\x80",          # overlong 4-byte
    b"\xc3",                      # lone lead byte
    b"\xc3\x28",                  # lead byte then ASCII
    b"\xe0\x80\xaf",
)

if __name__ == "__main__":
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus.json")
    with open(out, "w", encoding="utf-8") as f:
        json.dump(T, f, ensure_ascii=True, indent=0)
        f.write("\n")
    print(f"{out}: {len(T)} entries")
