// The syscall sequences of B1 and B2, written in C with no policy code and no JavaScript: what each sequence costs
// in the kernel alone. syscall-floor.mjs compiles and runs it; see BENCHMARKS.md, "What the kernel alone costs".
//
// Usage: syscall-floor append|atomic <dir> <ops per sample> <samples>
//   <dir> must exist and be empty; the program creates <dir>/home/{trajectories,pending_messages} in it.
// Prints one JSON object: for each sequence, the median over the samples of the time per operation, in ns.
// Samples of the sequences are interleaved (one sample of each in turn), so a drift of the machine hits all alike.
//
// append (B2: one 1 KiB line per call):
//   plain     open(path, O_WRONLY|O_APPEND|O_CREAT) + write + close: what fs.appendFileSync does, minus JavaScript
//   protocol  what privateAppendSync asks of the kernel per call (strace, native mode, as root): geteuid, the home
//             opened by path (O_PATH) and fstat'ed, the directory opened beneath it (O_NOFOLLOW), the file opened
//             beneath that (O_NOFOLLOW|O_NONBLOCK), fstat, two closes, the last byte read, write, close
//   held      the home held open across calls: openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS),
//             fstat, the last byte read, write, close
// atomic (B1: a 4,941-byte file replaced, file and directory fsynced):
//   plain     B1's floor: open(O_EXCL) a named temp, write, fchmod, fsync, close, rename, open the directory, fsync,
//             close
//   protocol  what atomicWriteJsonSync asks of the kernel per call (strace, native mode, as root): geteuid, the home
//             opened and fstat'ed, the directory opened beneath it, the target lstat'ed, an O_TMPFILE, write, fchmod,
//             getegid, fstat, fsync, linkat (AT_EMPTY_PATH) to a temp name, close, a rollback link of the old
//             version, renameat, the directory opened and fsynced, close, the rollback link removed, two closes
//   held      the directory held across calls: O_TMPFILE, write, fstat, fsync, linkat, close, renameat, the
//             directory opened and fsynced, close
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

struct open_how_ {
  uint64_t flags, mode, resolve;
};

static char home[4096], trajectories[4096], pending[4096];
static char line[1024];
static char doc[4941];
static unsigned long counter;

static void die(const char* what) {
  fprintf(stderr, "syscall-floor: %s: %s\n", what, strerror(errno));
  exit(1);
}

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void check(long r, const char* what) {
  if (r < 0) die(what);
}

// snprintf that refuses to truncate (a name cut short would measure another file).
#define FORMAT(buf, ...)                                           \
  do {                                                             \
    int n_ = snprintf(buf, sizeof buf, __VA_ARGS__);               \
    if (n_ < 0 || (size_t)n_ >= sizeof buf) {                      \
      fprintf(stderr, "syscall-floor: name too long: %s\n", #buf); \
      exit(2);                                                     \
    }                                                              \
  } while (0)

// ---- append --------------------------------------------------------------------------------------------------

static void append_plain(void) {
  char p[4200];
  FORMAT(p, "%s/plain.jsonl", trajectories);
  int fd = open(p, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  check(fd, "open");
  check(write(fd, line, sizeof line), "write");
  close(fd);
}

// The end of every append: the last byte read (a record starts on a new line), the line written, the file closed.
static void write_record(int fd, off_t size) {
  char last;
  if (size > 0) check(pread(fd, &last, 1, size - 1), "pread");
  check(write(fd, line, sizeof line), "write");
  close(fd);
}

static void append_protocol(void) {
  struct stat st;
  (void)geteuid();
  int h = open(home, O_PATH | O_DIRECTORY | O_CLOEXEC);
  check(h, "open home");
  check(fstat(h, &st), "fstat home");
  int d = openat(h, "trajectories", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  check(d, "openat dir");
  int fd = openat(d, "protocol.jsonl", O_RDWR | O_APPEND | O_CREAT | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC, 0600);
  check(fd, "openat file");
  check(fstat(fd, &st), "fstat file");
  close(d);
  close(h);
  write_record(fd, st.st_size);
}

static int held_home = -1;

static void append_held(void) {
  struct open_how_ how = {O_RDWR | O_APPEND | O_CREAT | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC, 0600, 0x08 | 0x04 | 0x02};
  int fd = (int)syscall(SYS_openat2, held_home, "trajectories/held.jsonl", &how, sizeof how);
  check(fd, "openat2");
  struct stat st;
  check(fstat(fd, &st), "fstat");
  write_record(fd, st.st_size);
}

// ---- atomic --------------------------------------------------------------------------------------------------

static void atomic_plain(void) {
  char tmp[4300], target[4200];
  FORMAT(target, "%s/plain.json", pending);
  FORMAT(tmp, "%s.%d.%lu.tmp", target, (int)getpid(), counter++);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  check(fd, "open temp");
  check(write(fd, doc, sizeof doc), "write");
  check(fchmod(fd, 0600), "fchmod");
  check(fsync(fd), "fsync");
  close(fd);
  check(rename(tmp, target), "rename");
  int dfd = open(pending, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  check(dfd, "open dir");
  check(fsync(dfd), "fsync dir");
  close(dfd);
}

// The directory held by `d` opened and fsynced (the rename made durable), then closed.
static void fsync_dir_at(int d) {
  int dfd = openat(d, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  check(dfd, "open dir");
  check(fsync(dfd), "fsync dir");
  close(dfd);
}

static void atomic_protocol(void) {
  struct stat st;
  char tmp[256], bak[256];
  (void)geteuid();
  int h = open(home, O_PATH | O_DIRECTORY | O_CLOEXEC);
  check(h, "open home");
  check(fstat(h, &st), "fstat home");
  int d = openat(h, "pending_messages", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  check(d, "openat dir");
  int existing = fstatat(d, "protocol.json", &st, AT_SYMLINK_NOFOLLOW) == 0;
  int fd = openat(d, ".", O_WRONLY | O_TMPFILE | O_CLOEXEC, 0600);
  check(fd, "O_TMPFILE");
  check(write(fd, doc, sizeof doc), "write");
  check(fchmod(fd, 0600), "fchmod");
  (void)getegid();
  check(fstat(fd, &st), "fstat");
  check(fsync(fd), "fsync");
  FORMAT(tmp, ".protocol.json.%d.%lu.tmp", (int)getpid(), counter);
  FORMAT(bak, ".protocol.json.%d.%lu.bak", (int)getpid(), counter++);
  check(linkat(fd, "", d, tmp, AT_EMPTY_PATH), "linkat");
  close(fd);
  if (existing) check(linkat(d, "protocol.json", d, bak, 0), "link bak");
  check(renameat(d, tmp, d, "protocol.json"), "renameat");
  fsync_dir_at(d);
  if (existing) check(unlinkat(d, bak, 0), "unlink bak");
  close(d);
  close(h);
}

static int held_dir = -1;

static void atomic_held(void) {
  char tmp[256];
  int fd = openat(held_dir, ".", O_WRONLY | O_TMPFILE | O_CLOEXEC, 0600);
  check(fd, "O_TMPFILE");
  check(write(fd, doc, sizeof doc), "write");
  struct stat st;
  check(fstat(fd, &st), "fstat");
  check(fsync(fd), "fsync");
  FORMAT(tmp, ".held.json.%d.%lu.tmp", (int)getpid(), counter++);
  check(linkat(fd, "", held_dir, tmp, AT_EMPTY_PATH), "linkat");
  close(fd);
  check(renameat(held_dir, tmp, held_dir, "held.json"), "renameat");
  fsync_dir_at(held_dir);
}

// ---- driver --------------------------------------------------------------------------------------------------

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char** argv) {
  if (argc != 5 || (strcmp(argv[1], "append") != 0 && strcmp(argv[1], "atomic") != 0)) {
    fprintf(stderr, "usage: syscall-floor append|atomic <dir> <ops per sample> <samples>\n");
    return 2;
  }
  int atomic = strcmp(argv[1], "atomic") == 0;
  long ops = strtol(argv[3], NULL, 10), samples = strtol(argv[4], NULL, 10);
  if (ops < 1 || samples < 1 || samples > 99) {
    fprintf(stderr, "syscall-floor: ops and samples must be positive (samples at most 99)\n");
    return 2;
  }
  FORMAT(home, "%s/home", argv[2]);
  FORMAT(trajectories, "%s/trajectories", home);
  FORMAT(pending, "%s/pending_messages", home);
  check(mkdir(home, 0700), "mkdir home");
  check(mkdir(trajectories, 0700), "mkdir trajectories");
  check(mkdir(pending, 0700), "mkdir pending_messages");
  memset(line, 'x', sizeof line);
  line[sizeof line - 1] = '\n';
  memset(doc, 'y', sizeof doc);
  doc[sizeof doc - 1] = '\n';
  held_home = open(home, O_PATH | O_DIRECTORY | O_CLOEXEC);
  held_dir = open(pending, O_PATH | O_DIRECTORY | O_CLOEXEC);
  check(held_home, "open home");
  check(held_dir, "open dir");

  void (*fn[3])(void) = {atomic ? atomic_plain : append_plain, atomic ? atomic_protocol : append_protocol,
                         atomic ? atomic_held : append_held};
  const char* names[3] = {"plain", "protocol", "held"};
  double t[3][99];
  for (int k = 0; k < 3; k++) fn[k]();  // warm-up; also makes the replaced files exist
  for (long s = 0; s < samples; s++) {
    if (!atomic) {
      // Each sample appends to new files, as B2 does: a file grown by earlier samples would weigh on later ones.
      const char* files[3] = {"plain.jsonl", "protocol.jsonl", "held.jsonl"};
      for (int k = 0; k < 3; k++) {
        char p[4200];
        FORMAT(p, "%s/%s", trajectories, files[k]);
        if (unlink(p) != 0 && errno != ENOENT) die("unlink");
      }
    }
    for (int k = 0; k < 3; k++) {
      double t0 = now_ns();
      for (long i = 0; i < ops; i++) fn[k]();
      t[k][s] = (now_ns() - t0) / (double)ops;
    }
  }
  printf("{\"mode\":\"%s\",\"ops\":%ld,\"samples\":%ld", argv[1], ops, samples);
  for (int k = 0; k < 3; k++) printf(",\"%s\":%.1f", names[k], median(t[k], (int)samples));
  printf("}\n");
  return 0;
}
