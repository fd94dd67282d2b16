// Go's fmt package as text/template uses it (print, printf, println and the
// printing of action results), over helm::Value.
#pragma once

#include <string>
#include <string_view>

#include "helm/value.h"

namespace eco::helm {

std::string Sprint(const ValueList& args);
std::string Sprintln(const ValueList& args);
std::string Sprintf(std::string_view format, const ValueList& args);
// fmt's %v of one value.
std::string FormatValue(const Value& v);
// strconv.FormatFloat(f, fmt, prec, 64); prec -1 = shortest round-trip.
std::string FormatFloat(double f, char fmt, int prec);
// strconv.FormatFloat(f, 'g', -1, 32), NaN and infinities spelled as strconv does.
std::string FormatFloat32G(double f);
// The UTF-8 bytes of `r` as given: no check for surrogates or range.
void AppendUtf8(std::string* out, char32_t r);
// strconv.Quote.
std::string Quote(std::string_view s);

}  // namespace eco::helm
