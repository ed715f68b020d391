#include "viz/color_science.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace coli::viz {
namespace {

constexpr double kXn = 0.95047, kYn = 1.0, kZn = 1.08883; // D65, CIE 15:2004
constexpr double kDelta = 6.0 / 29.0;

double labF(double t) {
    return t > kDelta * kDelta * kDelta ? std::cbrt(t) : t / (3 * kDelta * kDelta) + 4.0 / 29.0;
}
double labFInv(double f) {
    return f > kDelta ? f * f * f : 3 * kDelta * kDelta * (f - 4.0 / 29.0);
}
double deg(double rad) {
    return rad * 180.0 / std::numbers::pi;
}
double rad(double deg) {
    return deg * std::numbers::pi / 180.0;
}

} // namespace

double srgbToLinear(double c) {
    return c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4);
}
double linearToSrgb(double c) {
    return c <= 0.0031308 ? 12.92 * c : 1.055 * std::pow(c, 1.0 / 2.4) - 0.055;
}
Rgb srgbToLinear(const Rgb& s) {
    return {srgbToLinear(s.r), srgbToLinear(s.g), srgbToLinear(s.b)};
}
Rgb linearToSrgb(const Rgb& l) {
    return {linearToSrgb(l.r), linearToSrgb(l.g), linearToSrgb(l.b)};
}

Xyz linearToXyz(const Rgb& c) {
    return {0.4124564 * c.r + 0.3575761 * c.g + 0.1804375 * c.b,
            0.2126729 * c.r + 0.7151522 * c.g + 0.0721750 * c.b,
            0.0193339 * c.r + 0.1191920 * c.g + 0.9503041 * c.b};
}
Rgb xyzToLinear(const Xyz& v) {
    return {3.2404542 * v.x - 1.5371385 * v.y - 0.4985314 * v.z,
            -0.9692660 * v.x + 1.8760108 * v.y + 0.0415560 * v.z,
            0.0556434 * v.x - 0.2040259 * v.y + 1.0572252 * v.z};
}
Lab xyzToLab(const Xyz& v) {
    const double fx = labF(v.x / kXn), fy = labF(v.y / kYn), fz = labF(v.z / kZn);
    return {116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)};
}
Xyz labToXyz(const Lab& c) {
    const double fy = (c.l + 16) / 116, fx = fy + c.a / 500, fz = fy - c.b / 200;
    return {kXn * labFInv(fx), kYn * labFInv(fy), kZn * labFInv(fz)};
}
Rgb srgb8ToLinear(const Rgba8& c) {
    return srgbToLinear(Rgb{c.r / 255.0, c.g / 255.0, c.b / 255.0});
}
Lab srgb8ToLab(const Rgba8& c) {
    return xyzToLab(linearToXyz(srgb8ToLinear(c)));
}
Rgba8 toSrgb8(const Rgb& l, uint8_t alpha) {
    auto q = [](double v) {
        const double s = linearToSrgb(std::clamp(v, 0.0, 1.0));
        return static_cast<uint8_t>(std::lround(std::clamp(s, 0.0, 1.0) * 255.0));
    };
    return {q(l.r), q(l.g), q(l.b), alpha};
}

// Sharma, Wu, Dalal 2005, equations (1)-(22).
double ciede2000(const Lab& c1, const Lab& c2) {
    const double C1 = std::hypot(c1.a, c1.b), C2 = std::hypot(c2.a, c2.b);
    const double Cbar = (C1 + C2) / 2;
    const double Cbar7 = std::pow(Cbar, 7);
    const double G = 0.5 * (1 - std::sqrt(Cbar7 / (Cbar7 + std::pow(25.0, 7))));
    const double a1p = (1 + G) * c1.a, a2p = (1 + G) * c2.a;
    const double C1p = std::hypot(a1p, c1.b), C2p = std::hypot(a2p, c2.b);
    auto hueDeg = [](double b, double ap) {
        if (b == 0 && ap == 0) return 0.0;
        const double h = deg(std::atan2(b, ap));
        return h < 0 ? h + 360 : h;
    };
    const double h1p = hueDeg(c1.b, a1p), h2p = hueDeg(c2.b, a2p);

    const double dLp = c2.l - c1.l;
    const double dCp = C2p - C1p;
    double dhp = 0;
    if (C1p * C2p != 0) {
        dhp = h2p - h1p;
        if (dhp > 180)
            dhp -= 360;
        else if (dhp < -180)
            dhp += 360;
    }
    const double dHp = 2 * std::sqrt(C1p * C2p) * std::sin(rad(dhp / 2));

    const double Lbarp = (c1.l + c2.l) / 2;
    const double Cbarp = (C1p + C2p) / 2;
    double hbarp = h1p + h2p;
    if (C1p * C2p != 0) {
        if (std::abs(h1p - h2p) <= 180)
            hbarp = (h1p + h2p) / 2;
        else if (h1p + h2p < 360)
            hbarp = (h1p + h2p + 360) / 2;
        else
            hbarp = (h1p + h2p - 360) / 2;
    }
    const double T = 1 - 0.17 * std::cos(rad(hbarp - 30)) + 0.24 * std::cos(rad(2 * hbarp)) +
                     0.32 * std::cos(rad(3 * hbarp + 6)) - 0.20 * std::cos(rad(4 * hbarp - 63));
    const double dTheta = 30 * std::exp(-std::pow((hbarp - 275) / 25, 2));
    const double Cbarp7 = std::pow(Cbarp, 7);
    const double Rc = 2 * std::sqrt(Cbarp7 / (Cbarp7 + std::pow(25.0, 7)));
    const double Lm = (Lbarp - 50) * (Lbarp - 50);
    const double Sl = 1 + 0.015 * Lm / std::sqrt(20 + Lm);
    const double Sc = 1 + 0.045 * Cbarp;
    const double Sh = 1 + 0.015 * Cbarp * T;
    const double Rt = -std::sin(rad(2 * dTheta)) * Rc;
    const double l = dLp / Sl, c = dCp / Sc, h = dHp / Sh;
    return std::sqrt(std::max(0.0, l * l + c * c + h * h + Rt * c * h));
}

Rgb simulateCvd(const Rgb& c, Vision vision) {
    // Machado, Oliveira, Fernandes 2009, Table/supplement: severity 1.0.
    static constexpr double kProtan[3][3] = {{0.152286, 1.052583, -0.204868},
                                             {0.114503, 0.786281, 0.099216},
                                             {-0.003882, -0.048116, 1.051998}};
    static constexpr double kDeutan[3][3] = {{0.367322, 0.860646, -0.227968},
                                             {0.280085, 0.672501, 0.047413},
                                             {-0.011820, 0.042940, 0.968881}};
    if (vision == Vision::Normal) return c;
    const auto& m = vision == Vision::Protanopia ? kProtan : kDeutan;
    auto row = [&](int i) {
        return std::clamp(m[i][0] * c.r + m[i][1] * c.g + m[i][2] * c.b, 0.0, 1.0);
    };
    return {row(0), row(1), row(2)};
}
Rgba8 simulateCvd(const Rgba8& c, Vision vision) {
    return toSrgb8(simulateCvd(srgb8ToLinear(c), vision), c.a);
}
const char* visionName(Vision vision) {
    switch (vision) {
    case Vision::Normal:
        return "normal";
    case Vision::Protanopia:
        return "protanopia";
    case Vision::Deuteranopia:
        return "deuteranopia";
    }
    return "?";
}

} // namespace coli::viz
