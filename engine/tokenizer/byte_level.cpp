#include "tokenizer/byte_level.h"

#include "core/strings.h"
#include "tokenizer/utf8.h"

#include <array>

namespace coli::byte_level {
namespace {

struct Tables {
    std::array<char32_t, 256> toChar{};
    std::array<std::string, 256> toUtf8;
    std::array<int, 324> toByte{}; // alphabet code points are all < 0x144; -1 elsewhere

    Tables() {
        toByte.fill(-1);
        int n = 0;
        for (int b = 0; b < 256; ++b) {
            const bool printable =
                (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            toChar[b] = printable ? char32_t(b) : char32_t(256 + n++);
            toByte[toChar[b]] = b;
            appendUtf8(toUtf8[b], toChar[b]);
        }
    }
};

const Tables& tables() {
    static const Tables t;
    return t;
}

} // namespace

char32_t byteToChar(unsigned char b) {
    return tables().toChar[b];
}

std::optional<unsigned char> charToByte(char32_t cp) {
    if (cp >= tables().toByte.size() || tables().toByte[cp] < 0) return std::nullopt;
    return static_cast<unsigned char>(tables().toByte[cp]);
}

void encodeBytes(std::string_view bytes, std::string& out) {
    const Tables& t = tables();
    for (unsigned char b : bytes)
        out += t.toUtf8[b];
}

bool decodeToken(std::string_view token, std::string& out) {
    const size_t mark = out.size();
    size_t i = 0;
    while (i < token.size()) {
        const auto b = charToByte(utf8::next(token, i));
        if (!b) {
            out.resize(mark);
            return false;
        }
        out.push_back(static_cast<char>(*b));
    }
    return true;
}

} // namespace coli::byte_level
