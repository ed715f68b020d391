#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"

namespace coli {

struct StreamDecoder::State {
    Decoder::State decoder;
    std::string pending; // raw bytes whose last character may still be incomplete
};

StreamDecoder::StreamDecoder(const Tokenizer& tok, bool skipSpecial)
    : m_tok(tok), m_skipSpecial(skipSpecial), m_state(std::make_unique<State>()) {}
StreamDecoder::~StreamDecoder() = default;
StreamDecoder::StreamDecoder(StreamDecoder&&) noexcept = default;

std::string StreamDecoder::push(int32_t id) {
    const Tokenizer::Impl& im = *m_tok.m_impl;
    bool isAdded = false;
    const std::string* token = im.tokenOf(id, isAdded);
    if (!token || (m_skipSpecial && im.isSpecial(id))) return {};
    im.decoder.push(*token, isAdded, m_state->decoder, m_state->pending);
    // Emit only up to the last complete character: sanitizing a settled prefix gives the same
    // text as sanitizing it as part of the whole stream (utf8::settledPrefix).
    const size_t n = utf8::settledPrefix(m_state->pending);
    std::string out = sanitizeUtf8(std::string_view(m_state->pending).substr(0, n));
    m_state->pending.erase(0, n);
    return out;
}

std::string StreamDecoder::flush() {
    m_tok.m_impl->decoder.finish(m_state->decoder, m_state->pending);
    std::string out = sanitizeUtf8(m_state->pending);
    m_state->pending.clear();
    return out;
}

void StreamDecoder::reset() {
    m_state = std::make_unique<State>();
}

} // namespace coli
