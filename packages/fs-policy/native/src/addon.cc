// @hermes/fs-policy native descriptor layer: the *at syscalls Node does not expose, each relative to a held
// directory descriptor. Every primitive has a sync form (runs on the calling thread) and an async form
// (`<name>Async`: runs on the libuv thread pool, returns a Promise). Every failure is a system error shaped
// like Node's (code, negative errno, syscall, path); every bad argument is a TypeError or RangeError.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <napi.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "args.h"
#include "errors.h"

#ifndef O_TMPFILE
#define O_TMPFILE (020000000 | O_DIRECTORY)
#endif
#ifndef O_PATH
#define O_PATH 010000000
#endif
#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif
#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#ifndef SYS_renameat2
#define SYS_renameat2 316
#endif

namespace fsp {
namespace {

// The kernel's struct open_how (linux/openat2.h), declared here so the build needs no kernel headers.
struct OpenHow {
  uint64_t flags;
  uint64_t mode;
  uint64_t resolve;
};

constexpr int kResolveNoXdev = 0x01;
constexpr int kResolveNoMagiclinks = 0x02;
constexpr int kResolveNoSymlinks = 0x04;
constexpr int kResolveBeneath = 0x08;
constexpr int kResolveInRoot = 0x10;
constexpr int kResolveAll = 0x1f;  // RESOLVE_CACHED (0x20) is not offered: callers would have to retry EAGAIN
constexpr int kRenameNoreplace = 1 << 0;
constexpr int kRenameExchange = 1 << 1;

enum class Kind { Undefined, Number, Stat, Text };

// What a syscall left: an errno, or a number, a stat, or a text.
struct Outcome {
  int err = 0;
  int64_t num = 0;
  struct stat st {};
  std::string text;
};

// One checked call, ready to run on any thread (it holds copies, never JavaScript values).
struct Call {
  const char* syscall;
  std::string path;  // for the error message
  Kind kind;
  std::function<Outcome()> run;
};

Outcome FromRet(int64_t r) {
  Outcome o;
  if (r < 0) o.err = errno;
  else o.num = r;
  return o;
}

double Ms(const struct timespec& t) { return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6; }

Napi::Value ToJs(Napi::Env env, const Call& call, const Outcome& o) {
  switch (call.kind) {
    case Kind::Undefined:
      return env.Undefined();
    case Kind::Number:
      return Napi::Number::New(env, static_cast<double>(o.num));
    case Kind::Text:
      return Napi::String::New(env, o.text);
    case Kind::Stat: {
      Napi::Object s = Napi::Object::New(env);
      s.Set("dev", Napi::Number::New(env, static_cast<double>(o.st.st_dev)));
      s.Set("ino", Napi::Number::New(env, static_cast<double>(o.st.st_ino)));
      s.Set("mode", Napi::Number::New(env, static_cast<double>(o.st.st_mode)));
      s.Set("uid", Napi::Number::New(env, static_cast<double>(o.st.st_uid)));
      s.Set("gid", Napi::Number::New(env, static_cast<double>(o.st.st_gid)));
      s.Set("nlink", Napi::Number::New(env, static_cast<double>(o.st.st_nlink)));
      s.Set("size", Napi::Number::New(env, static_cast<double>(o.st.st_size)));
      s.Set("rdev", Napi::Number::New(env, static_cast<double>(o.st.st_rdev)));
      s.Set("blksize", Napi::Number::New(env, static_cast<double>(o.st.st_blksize)));
      s.Set("blocks", Napi::Number::New(env, static_cast<double>(o.st.st_blocks)));
      s.Set("atimeMs", Napi::Number::New(env, Ms(o.st.st_atim)));
      s.Set("mtimeMs", Napi::Number::New(env, Ms(o.st.st_mtim)));
      s.Set("ctimeMs", Napi::Number::New(env, Ms(o.st.st_ctim)));
      return s;
    }
  }
  return env.Undefined();
}

// ---- the primitives: each checks its arguments and returns the call to run ----------------------------------

Call BuildOpenat(const Napi::CallbackInfo& info) {
  int dirfd = FdArg(info, 0, "dirfd");
  std::string p = PathArg(info, 1, "path", false);
  int flags = static_cast<int>(IntArg(info, 2, "flags", 0, INT32_MAX));
  auto mode = static_cast<mode_t>(IntArg(info, 3, "mode", 0, 07777));
  return {"openat", p, Kind::Number, [=] { return FromRet(::openat(dirfd, p.c_str(), flags | O_CLOEXEC, mode)); }};
}

Call BuildOpenat2(const Napi::CallbackInfo& info) {
  int dirfd = FdArg(info, 0, "dirfd");
  std::string p = PathArg(info, 1, "path", false);
  int flags = static_cast<int>(IntArg(info, 2, "flags", 0, INT32_MAX));
  int64_t mode = IntArg(info, 3, "mode", 0, 07777);
  int64_t resolve = IntArg(info, 4, "resolve", 0, kResolveAll);
  return {"openat2", p, Kind::Number, [=] {
            OpenHow how{};
            how.flags = static_cast<uint64_t>(static_cast<unsigned>(flags | O_CLOEXEC));
            // The kernel refuses a mode without O_CREAT/O_TMPFILE: pass it only where it means something.
            how.mode = (flags & (O_CREAT | O_TMPFILE)) != 0 ? static_cast<uint64_t>(mode) : 0;
            how.resolve = static_cast<uint64_t>(resolve);
            return FromRet(::syscall(SYS_openat2, dirfd, p.c_str(), &how, sizeof how));
          }};
}

Call BuildMkdirat(const Napi::CallbackInfo& info) {
  int dirfd = FdArg(info, 0, "dirfd");
  std::string p = PathArg(info, 1, "name", false);
  auto mode = static_cast<mode_t>(IntArg(info, 2, "mode", 0, 07777));
  return {"mkdirat", p, Kind::Undefined, [=] { return FromRet(::mkdirat(dirfd, p.c_str(), mode)); }};
}

Call BuildRenameat2(const Napi::CallbackInfo& info) {
  int oldfd = FdArg(info, 0, "olddirfd");
  std::string from = PathArg(info, 1, "oldname", false);
  int newfd = FdArg(info, 2, "newdirfd");
  std::string to = PathArg(info, 3, "newname", false);
  auto flags = static_cast<unsigned>(IntArg(info, 4, "flags", 0, kRenameNoreplace | kRenameExchange));
  if (flags == (kRenameNoreplace | kRenameExchange)) {
    throw RangeErr(info.Env(), "ERR_OUT_OF_RANGE", "argument 4 (flags): RENAME_NOREPLACE and RENAME_EXCHANGE exclude each other");
  }
  return {"renameat2", from, Kind::Undefined, [=] {
            if (flags == 0) return FromRet(::renameat(oldfd, from.c_str(), newfd, to.c_str()));
            return FromRet(::syscall(SYS_renameat2, oldfd, from.c_str(), newfd, to.c_str(), flags));
          }};
}

Call BuildUnlinkat(const Napi::CallbackInfo& info) {
  int dirfd = FdArg(info, 0, "dirfd");
  std::string p = PathArg(info, 1, "name", false);
  int flags = static_cast<int>(IntArg(info, 2, "flags", 0, AT_REMOVEDIR));
  if (flags != 0 && flags != AT_REMOVEDIR) throw RangeErr(info.Env(), "ERR_OUT_OF_RANGE", "argument 2 (flags): only AT_REMOVEDIR");
  return {"unlinkat", p, Kind::Undefined, [=] { return FromRet(::unlinkat(dirfd, p.c_str(), flags)); }};
}

Call BuildLinkat(const Napi::CallbackInfo& info) {
  int oldfd = FdArg(info, 0, "olddirfd");
  std::string from = PathArg(info, 1, "oldname", true);
  int newfd = FdArg(info, 2, "newdirfd");
  std::string to = PathArg(info, 3, "newname", false);
  int flags = static_cast<int>(IntArg(info, 4, "flags", 0, AT_EMPTY_PATH | AT_SYMLINK_FOLLOW));
  if ((flags & ~(AT_EMPTY_PATH | AT_SYMLINK_FOLLOW)) != 0) {
    throw RangeErr(info.Env(), "ERR_OUT_OF_RANGE", "argument 4 (flags): only AT_EMPTY_PATH and AT_SYMLINK_FOLLOW");
  }
  return {"linkat", to, Kind::Undefined, [=] { return FromRet(::linkat(oldfd, from.c_str(), newfd, to.c_str(), flags)); }};
}

// Gives the file open on `fd` (an O_TMPFILE file, say) the name `newname` in `newdirfd`: linkat(AT_EMPTY_PATH)
// where the process may (CAP_DAC_READ_SEARCH), else through /proc/self/fd/<fd> with AT_SYMLINK_FOLLOW. Answers
// which of the two made the link ('empty-path' or 'procfd').
Call BuildLinkFd(const Napi::CallbackInfo& info) {
  int fd = FdArg(info, 0, "fd");
  int newfd = FdArg(info, 1, "newdirfd");
  std::string to = PathArg(info, 2, "newname", false);
  return {"linkat", to, Kind::Text, [=] {
            Outcome o;
            if (::linkat(fd, "", newfd, to.c_str(), AT_EMPTY_PATH) == 0) {
              o.text = "empty-path";
              return o;
            }
            if (errno != ENOENT && errno != EPERM && errno != EINVAL) {
              o.err = errno;
              return o;
            }
            std::string proc = "/proc/self/fd/" + std::to_string(fd);
            if (::linkat(AT_FDCWD, proc.c_str(), newfd, to.c_str(), AT_SYMLINK_FOLLOW) == 0) {
              o.text = "procfd";
              return o;
            }
            o.err = errno;
            return o;
          }};
}

Call BuildFstatat(const Napi::CallbackInfo& info) {
  int dirfd = FdArg(info, 0, "dirfd");
  std::string p = PathArg(info, 1, "name", true);
  int flags = info.Length() > 2 ? static_cast<int>(IntArg(info, 2, "flags", 0, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW)) : 0;
  if ((flags & ~(AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW)) != 0) {
    throw RangeErr(info.Env(), "ERR_OUT_OF_RANGE", "argument 2 (flags): only AT_EMPTY_PATH");
  }
  // A link is never followed here: AT_SYMLINK_NOFOLLOW always.
  int all = flags | AT_SYMLINK_NOFOLLOW;
  return {"fstatat", p, Kind::Stat, [=] {
            Outcome o;
            if (::fstatat(dirfd, p.c_str(), &o.st, all) != 0) o.err = errno;
            return o;
          }};
}

Call BuildReadlinkat(const Napi::CallbackInfo& info) {
  int dirfd = FdArg(info, 0, "dirfd");
  std::string p = PathArg(info, 1, "name", true);
  return {"readlinkat", p, Kind::Text, [=] {
            Outcome o;
            char buf[kPathMax + 2];
            ssize_t n = ::readlinkat(dirfd, p.c_str(), buf, sizeof buf);
            if (n < 0) o.err = errno;
            else if (static_cast<size_t>(n) >= sizeof buf) o.err = ENAMETOOLONG;
            else o.text.assign(buf, static_cast<size_t>(n));
            return o;
          }};
}

Call BuildFchownat(const Napi::CallbackInfo& info) {
  int dirfd = FdArg(info, 0, "dirfd");
  std::string p = PathArg(info, 1, "name", true);
  auto uid = static_cast<uid_t>(IntArg(info, 2, "uid", -1, 0xfffffffeLL));
  auto gid = static_cast<gid_t>(IntArg(info, 3, "gid", -1, 0xfffffffeLL));
  int flags = static_cast<int>(IntArg(info, 4, "flags", 0, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW));
  if ((flags & ~(AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW)) != 0) {
    throw RangeErr(info.Env(), "ERR_OUT_OF_RANGE", "argument 4 (flags): only AT_EMPTY_PATH and AT_SYMLINK_NOFOLLOW");
  }
  return {"fchownat", p, Kind::Undefined, [=] { return FromRet(::fchownat(dirfd, p.c_str(), uid, gid, flags)); }};
}

Call BuildFchmod(const Napi::CallbackInfo& info) {
  int fd = FdArg(info, 0, "fd");
  auto mode = static_cast<mode_t>(IntArg(info, 1, "mode", 0, 07777));
  return {"fchmod", "", Kind::Undefined, [=] { return FromRet(::fchmod(fd, mode)); }};
}

// ---- sync and async forms ------------------------------------------------------------------------------------

class Worker : public Napi::AsyncWorker {
 public:
  Worker(Napi::Env env, Call call)
      : Napi::AsyncWorker(env, "hermes-fs-policy-native"), call_(std::move(call)), deferred_(Napi::Promise::Deferred::New(env)) {}
  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  void Execute() override { out_ = call_.run(); }
  void OnOK() override {
    Napi::Env env = Env();
    if (out_.err != 0) deferred_.Reject(SystemError(env, out_.err, call_.syscall, call_.path).Value());
    else deferred_.Resolve(ToJs(env, call_, out_));
  }

 private:
  Call call_;
  Outcome out_;
  Napi::Promise::Deferred deferred_;
};

template <Call (*Build)(const Napi::CallbackInfo&)>
Napi::Value Sync(const Napi::CallbackInfo& info) {
  Call call = Build(info);
  Outcome o = call.run();
  if (o.err != 0) throw SystemError(info.Env(), o.err, call.syscall, call.path);
  return ToJs(info.Env(), call, o);
}

// Bad arguments reject the promise (as fs.promises does); the syscall runs on the thread pool.
template <Call (*Build)(const Napi::CallbackInfo&)>
Napi::Value Async(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Call call;
  try {
    call = Build(info);
  } catch (const Napi::Error& e) {
    auto d = Napi::Promise::Deferred::New(env);
    d.Reject(e.Value());
    return d.Promise();
  }
  auto* worker = new Worker(env, std::move(call));
  Napi::Promise p = worker->Promise();
  worker->Queue();
  return p;
}

// Whether openat2 is usable here: { available, code } (code: the errno of the probe, '' when available).
Napi::Value Openat2Probe(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  OpenHow how{};
  how.flags = static_cast<uint64_t>(O_PATH | O_DIRECTORY | O_CLOEXEC);
  how.resolve = static_cast<uint64_t>(kResolveBeneath | kResolveNoMagiclinks);
  // Relative to a descriptor of `/` (O_PATH needs no permission), so only the syscall itself can fail.
  int root = ::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  long fd = root < 0 ? -1 : ::syscall(SYS_openat2, root, ".", &how, sizeof how);
  int err = fd < 0 ? errno : 0;
  if (fd >= 0) ::close(static_cast<int>(fd));
  if (root >= 0) ::close(root);
  Napi::Object r = Napi::Object::New(env);
  r.Set("available", Napi::Boolean::New(env, fd >= 0));
  r.Set("code", Napi::String::New(env, fd >= 0 ? "" : ErrnoName(err)));
  return r;
}

#ifdef HERMES_ASAN_SELFTEST
#ifndef __SANITIZE_ADDRESS__
#error "HERMES_ASAN_SELFTEST is for the AddressSanitizer build only (native/build.mjs --asan --selftest)"
#endif
// asanSelfTest(): writes one byte past a 16-byte heap block. AddressSanitizer stops the process there with a
// heap-buffer-overflow report; a return means the sanitizer is not live. Only in `--asan --selftest`. Exempt from
// UndefinedBehaviorSanitizer, whose object-size check would otherwise report the write first.
__attribute__((no_sanitize_undefined)) Napi::Value AsanSelfTest(const Napi::CallbackInfo& info) {
  // Volatile, so that the compiler neither removes the write nor warns about it.
  volatile char* block = new char[16];
  volatile std::size_t past = 16;
  block[past] = 1;
  delete[] block;
  return info.Env().Undefined();
}
#endif

#define FSP_EXPORT(name, build)                                     \
  exports.Set(name, Napi::Function::New(env, Sync<build>, name));   \
  exports.Set(name "Async", Napi::Function::New(env, Async<build>, name "Async"));

Napi::Object InitExports(Napi::Env env, Napi::Object exports) {
  FSP_EXPORT("openat", BuildOpenat)
  FSP_EXPORT("openat2", BuildOpenat2)
  FSP_EXPORT("mkdirat", BuildMkdirat)
  FSP_EXPORT("renameat2", BuildRenameat2)
  FSP_EXPORT("unlinkat", BuildUnlinkat)
  FSP_EXPORT("linkat", BuildLinkat)
  FSP_EXPORT("linkFd", BuildLinkFd)
  FSP_EXPORT("fstatat", BuildFstatat)
  FSP_EXPORT("readlinkat", BuildReadlinkat)
  FSP_EXPORT("fchownat", BuildFchownat)
  FSP_EXPORT("fchmod", BuildFchmod)
  exports.Set("openat2Probe", Napi::Function::New(env, Openat2Probe, "openat2Probe"));
  Napi::Object c = Napi::Object::New(env);
  c.Set("O_PATH", O_PATH);
  c.Set("O_TMPFILE", O_TMPFILE);
  c.Set("AT_EMPTY_PATH", AT_EMPTY_PATH);
  c.Set("AT_REMOVEDIR", AT_REMOVEDIR);
  c.Set("AT_SYMLINK_FOLLOW", AT_SYMLINK_FOLLOW);
  c.Set("AT_SYMLINK_NOFOLLOW", AT_SYMLINK_NOFOLLOW);
  c.Set("RESOLVE_NO_XDEV", kResolveNoXdev);
  c.Set("RESOLVE_NO_MAGICLINKS", kResolveNoMagiclinks);
  c.Set("RESOLVE_NO_SYMLINKS", kResolveNoSymlinks);
  c.Set("RESOLVE_BENEATH", kResolveBeneath);
  c.Set("RESOLVE_IN_ROOT", kResolveInRoot);
  c.Set("RENAME_NOREPLACE", kRenameNoreplace);
  c.Set("RENAME_EXCHANGE", kRenameExchange);
  exports.Set("constants", c);
  exports.Set("abi", Napi::Number::New(env, 1));
#ifdef HERMES_ASAN_SELFTEST
  exports.Set("asanSelfTest", Napi::Function::New(env, AsanSelfTest, "asanSelfTest"));
#endif
  return exports;
}

}  // namespace

Napi::Object Init(Napi::Env env, Napi::Object exports) { return InitExports(env, exports); }

}  // namespace fsp

static Napi::Object InitModule(Napi::Env env, Napi::Object exports) { return fsp::Init(env, exports); }

NODE_API_MODULE(fs_policy, InitModule)
