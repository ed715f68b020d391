#pragma once
// Colour science for the Brain and Atlas palettes (issue 12, docs/visualisation.md "Colours").
// Sources of the formulas:
//  - sRGB transfer function and the linear-RGB <-> XYZ matrices (D65): IEC 61966-2-1:1999;
//  - CIELAB (CIE 1976 L*a*b*) with the D65 white Xn = 0.95047, Yn = 1, Zn = 1.08883: CIE 15:2004;
//  - CIEDE2000: G. Sharma, W. Wu, E. N. Dalal, "The CIEDE2000 color-difference formula:
//    implementation notes, supplementary test data, and mathematical observations", Color Research
//    & Application 30(1), 2005 (kL = kC = kH = 1);
//  - colour-vision deficiency: G. M. Machado, M. M. Oliveira, L. A. F. Fernandes, "A
//    physiologically-based model for simulation of color vision deficiency", IEEE TVCG 15(6), 2009:
//    their 3x3 matrices for severity 1.0, applied to linear RGB, result clamped to [0, 1].
// Units: sRGB and linear RGB components in [0, 1] (8-bit sRGB in [0, 255]); XYZ with Y = 1 for
// the white point; L* in [0, 100]. Out-of-range inputs are processed as given (no errors); only
// toSrgb8() clamps. Thread-safety: pure functions.
#include <cstdint>

namespace coli::viz {

struct Rgb {
    double r = 0, g = 0, b = 0;
};
struct Xyz {
    double x = 0, y = 0, z = 0;
};
struct Lab {
    double l = 0, a = 0, b = 0;
};
// 8-bit sRGB with alpha: the vertex-colour format of the views.
struct Rgba8 {
    uint8_t r = 0, g = 0, b = 0, a = 255;
    bool operator==(const Rgba8&) const = default;
};

// sRGB transfer function, one component: encoded [0, 1] -> linear [0, 1] and back.
double srgbToLinear(double c);
double linearToSrgb(double c);
// Whole colours. `Rgb` is encoded sRGB for the *Srgb* names, linear otherwise.
Rgb srgbToLinear(const Rgb& srgb);
Rgb linearToSrgb(const Rgb& linear);
Xyz linearToXyz(const Rgb& linear);
Rgb xyzToLinear(const Xyz& xyz);
Lab xyzToLab(const Xyz& xyz);
Xyz labToXyz(const Lab& lab);
Lab srgb8ToLab(const Rgba8& c); // alpha ignored
// Linear RGB -> 8-bit sRGB, clamped to [0, 1] first, rounded to nearest.
Rgba8 toSrgb8(const Rgb& linear, uint8_t alpha = 255);
Rgb srgb8ToLinear(const Rgba8& c);

// CIEDE2000 colour difference (Sharma, Wu, Dalal 2005) with kL = kC = kH = 1. Symmetric, >= 0,
// 0 for identical colours.
double ciede2000(const Lab& a, const Lab& b);

enum class Vision { Normal, Protanopia, Deuteranopia };
// Machado et al. 2009 simulation at severity 1.0 on linear RGB, clamped to [0, 1]; Normal returns
// the input unchanged.
Rgb simulateCvd(const Rgb& linear, Vision vision);
Rgba8 simulateCvd(const Rgba8& c, Vision vision);
const char* visionName(Vision vision);

} // namespace coli::viz
