// Argument checks: every value from JavaScript is checked before a syscall sees it. A wrong type is a
// TypeError (ERR_INVALID_ARG_TYPE), a NUL byte a TypeError (ERR_INVALID_ARG_VALUE), an out-of-range number
// or an oversize name a RangeError (ERR_OUT_OF_RANGE, ENAMETOOLONG). Thrown as C++ exceptions, which
// node-addon-api turns into JavaScript exceptions: never an abort.
#pragma once

#include <napi.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "errors.h"

namespace fsp {

constexpr size_t kPathMax = 4095;  // bytes, without the terminating NUL (PATH_MAX - 1)
constexpr size_t kNameMax = 255;   // bytes of one component (NAME_MAX)

inline std::string ArgLabel(size_t i, const char* name) {
  return std::string("argument ") + std::to_string(i) + " (" + name + ")";
}

// An integer in [min, max]; a non-number, NaN, infinity or fraction is a TypeError.
inline int64_t IntArg(const Napi::CallbackInfo& info, size_t i, const char* name, int64_t min, int64_t max) {
  Napi::Env env = info.Env();
  if (i >= info.Length() || !info[i].IsNumber()) {
    throw TypeErr(env, "ERR_INVALID_ARG_TYPE", ArgLabel(i, name) + " must be an integer");
  }
  double d = info[i].As<Napi::Number>().DoubleValue();
  if (!std::isfinite(d) || std::trunc(d) != d) {
    throw TypeErr(env, "ERR_INVALID_ARG_TYPE", ArgLabel(i, name) + " must be an integer");
  }
  if (d < static_cast<double>(min) || d > static_cast<double>(max)) {
    throw RangeErr(env, "ERR_OUT_OF_RANGE",
                   ArgLabel(i, name) + " is out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return static_cast<int64_t>(d);
}

// A descriptor: 0 .. INT32_MAX. AT_FDCWD is refused: every call here is relative to a held directory.
inline int FdArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  return static_cast<int>(IntArg(info, i, name, 0, INT32_MAX));
}

// A relative path (or one component): a string without NUL, at most 4095 bytes, no component over 255 bytes.
// An absolute path is refused: these calls only act below a held directory.
inline std::string PathArg(const Napi::CallbackInfo& info, size_t i, const char* name, bool allowEmpty) {
  Napi::Env env = info.Env();
  if (i >= info.Length() || !info[i].IsString()) {
    throw TypeErr(env, "ERR_INVALID_ARG_TYPE", ArgLabel(i, name) + " must be a string");
  }
  std::string s = info[i].As<Napi::String>().Utf8Value();
  if (s.find('\0') != std::string::npos) {
    throw TypeErr(env, "ERR_INVALID_ARG_VALUE", ArgLabel(i, name) + " must not contain a NUL byte");
  }
  if (s.empty() && !allowEmpty) {
    throw TypeErr(env, "ERR_INVALID_ARG_VALUE", ArgLabel(i, name) + " must not be empty");
  }
  if (!s.empty() && s[0] == '/') {
    throw TypeErr(env, "ERR_INVALID_ARG_VALUE", ArgLabel(i, name) + " must be relative to the descriptor");
  }
  if (s.size() > kPathMax) {
    throw RangeErr(env, "ENAMETOOLONG", ArgLabel(i, name) + " is longer than 4095 bytes");
  }
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find('/', start);
    if (end == std::string::npos) end = s.size();
    if (end - start > kNameMax) {
      throw RangeErr(env, "ENAMETOOLONG", ArgLabel(i, name) + " has a component longer than 255 bytes");
    }
    start = end + 1;
  }
  return s;
}

}  // namespace fsp
