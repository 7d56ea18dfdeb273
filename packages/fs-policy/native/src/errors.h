// Errors thrown to JavaScript: a system error shaped like Node's (code = errno name, errno = negative number,
// syscall, path), and typed argument errors (TypeError / RangeError with a `code`). Never an abort.
#pragma once

#include <napi.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace fsp {

// The errno names Node reports (uv_err_name), for the errnos these syscalls can return.
inline const char* ErrnoName(int e) {
  switch (e) {
#define FSP_E(name) \
  case name:        \
    return #name;
    FSP_E(EPERM) FSP_E(ENOENT) FSP_E(ESRCH) FSP_E(EINTR) FSP_E(EIO) FSP_E(ENXIO) FSP_E(E2BIG) FSP_E(EBADF)
    FSP_E(EAGAIN) FSP_E(ENOMEM) FSP_E(EACCES) FSP_E(EFAULT) FSP_E(EBUSY) FSP_E(EEXIST) FSP_E(EXDEV)
    FSP_E(ENODEV) FSP_E(ENOTDIR) FSP_E(EISDIR) FSP_E(EINVAL) FSP_E(ENFILE) FSP_E(EMFILE) FSP_E(ETXTBSY)
    FSP_E(EFBIG) FSP_E(ENOSPC) FSP_E(ESPIPE) FSP_E(EROFS) FSP_E(EMLINK) FSP_E(ERANGE) FSP_E(ENAMETOOLONG)
    FSP_E(ENOSYS) FSP_E(ENOTEMPTY) FSP_E(ELOOP) FSP_E(EOVERFLOW) FSP_E(EOPNOTSUPP) FSP_E(EDQUOT)
    FSP_E(ESTALE) FSP_E(ECANCELED) FSP_E(EILSEQ) FSP_E(ENOTSOCK)
#undef FSP_E
    default:
      return "UNKNOWN";
  }
}

// A system error for `syscall` on `path` (empty: none), as Node builds them.
inline Napi::Error SystemError(Napi::Env env, int err, const char* syscall, const std::string& path) {
  const char* name = ErrnoName(err);
  std::string msg = std::string(name) + ": " + std::strerror(err) + ", " + syscall;
  if (!path.empty()) msg += " '" + path + "'";
  Napi::Error e = Napi::Error::New(env, msg);
  e.Set("errno", Napi::Number::New(env, -err));
  e.Set("code", Napi::String::New(env, name));
  e.Set("syscall", Napi::String::New(env, syscall));
  if (!path.empty()) e.Set("path", Napi::String::New(env, path));
  return e;
}

inline Napi::Error TypeErr(Napi::Env env, const char* code, const std::string& msg) {
  Napi::TypeError e = Napi::TypeError::New(env, msg);
  e.Set("code", Napi::String::New(env, code));
  return e;
}

inline Napi::Error RangeErr(Napi::Env env, const char* code, const std::string& msg) {
  Napi::RangeError e = Napi::RangeError::New(env, msg);
  e.Set("code", Napi::String::New(env, code));
  return e;
}

}  // namespace fsp
