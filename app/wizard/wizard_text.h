#pragma once
// Small text helpers the wizard's files share (wizard_controller.cpp, wizard_hub.cpp,
// wizard_check.cpp, wizard_mirror.cpp): std::string to QString, byte counts and large counts in
// words. Thread-safety: pure functions.
#include "wizard/wizard_space.h"

#include <QString>

#include <cstdint>
#include <string>

namespace coli::app::wizard {

inline QString qs(const std::string& s) {
    return QString::fromStdString(s);
}
// wizard::bytesText as a QString: "1.2 GiB".
inline QString bytes(uint64_t n) {
    return qs(bytesText(n));
}
// "1.23 B", "45.6 M", "789": parameter counts.
inline QString countText(int64_t n) {
    if (n >= 1000000000) return QString::number(double(n) / 1e9, 'f', 2) + QStringLiteral(" B");
    if (n >= 1000000) return QString::number(double(n) / 1e6, 'f', 1) + QStringLiteral(" M");
    return QString::number(n);
}

} // namespace coli::app::wizard
