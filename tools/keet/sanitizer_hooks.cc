// Linked into the sanitized keet executables only (keet_asan of the fuzz
// build, keet_cli with -DKEET_SANITIZE=ON), never into a release keet.
//
// Default options, for a run whose environment sets none (a test that runs
// keet under `env -i`, a developer's shell): a memory error or undefined
// behaviour aborts the run, as scripts/sanitize's ASAN_OPTIONS and
// UBSAN_OPTIONS say; leaks of a short-lived CLI are not reported. The
// environment's options are parsed after these and win.
//
// Reports: besides stderr, each report goes to $KEET_SANITIZER_REPORTS/<pid>.txt
// when that folder is set. The end-to-end tests set it and fail the test
// during which a report appears, whatever exit status the test expected and
// wherever it sent keet's stderr (tests/support/testing.cc). log_path cannot
// do this: with ASan and UBSan in one runtime, UBSan ignores it.
//
// Start-up: GCC gives UBSan's own per-check data (1.26 million of keet_asan's
// 1.36 million globals) ASan redzones too, and registering them took 40% of a
// run's start (0.14 s against 0.08 s, and 150 MiB of shadow). Only the
// sanitizer runtime reads that data, so nothing can overflow out of it; it is
// left unregistered, and every other global keeps its redzone checks.
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define KEET_SANITIZER_HOOK extern "C" __attribute__((used, no_sanitize("address", "undefined")))

KEET_SANITIZER_HOOK const char* __asan_default_options() { return "detect_leaks=0:abort_on_error=1:halt_on_error=1"; }
KEET_SANITIZER_HOOK const char* __ubsan_default_options() {
  return "halt_on_error=1:abort_on_error=1:print_stacktrace=1";
}

extern "C" void __asan_set_error_report_callback(void (*callback)(const char*));
extern "C" void __ubsan_get_current_report_data(const char** kind, const char** message, const char** file,
                                                unsigned* line, unsigned* column, char** address);

namespace {

__attribute__((no_sanitize("address", "undefined"))) void keep_report(const char* text) {
  const char* dir = std::getenv("KEET_SANITIZER_REPORTS");
  if (!dir || !*dir) return;
  char path[4096];
  std::snprintf(path, sizeof path, "%s/%ld.txt", dir, static_cast<long>(getpid()));
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  for (size_t done = 0, size = std::strlen(text); done < size;) {
    ssize_t n = write(fd, text + done, size - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  close(fd);
}

__attribute__((constructor)) void keep_asan_reports() { __asan_set_error_report_callback(keep_report); }

// ASan's descriptor of an instrumented global (its interface, asan_interface_internal.h).
struct AsanGlobal {
  uintptr_t beg, size, size_with_redzone;
  const char* name;
  const char* module_name;
  uintptr_t has_dynamic_init;
  void* location;
  uintptr_t odr_indicator;
};
using GlobalsFn = void (*)(void*, long);  // as GCC declares them

// By hand, not strncmp: ASan's interceptor would check both strings each time.
__attribute__((no_sanitize("address", "undefined"))) bool sanitizer_data(const AsanGlobal& g) {
  constexpr char kPrefix[] = "*.Lubsan_";
  if (!g.name) return false;
  for (size_t i = 0; i + 1 < sizeof kPrefix; ++i)
    if (g.name[i] != kPrefix[i]) return false;
  return true;
}

// Calls `f` on each run of the module's table `g` that holds no sanitizer
// data. The table is read, never written: its pages stay shared with the file.
__attribute__((no_sanitize("address", "undefined"))) void for_program_globals(GlobalsFn f, AsanGlobal* g, long n) {
  long start = 0;
  for (long i = 0; i <= n; ++i)
    if (i == n || sanitizer_data(g[i])) {
      if (i > start) f(g + start, i - start);
      start = i + 1;
    }
}

__attribute__((no_sanitize("address", "undefined"))) GlobalsFn asan_function(const char* name) {
  return reinterpret_cast<GlobalsFn>(dlsym(RTLD_NEXT, name));
}

}  // namespace

KEET_SANITIZER_HOOK void __asan_register_globals(void* globals, long n) {
  static const GlobalsFn real = asan_function("__asan_register_globals");
  for_program_globals(real, static_cast<AsanGlobal*>(globals), n);
}

// Called by each module's destructors. The executable's globals stay
// registered: it is never unmapped, and walking its tables again at exit took
// a quarter of a run's start-up time. A shared library (the HTTP plugin, an
// instrumented one) unregisters as usual, since dlclose may unmap it.
extern "C" char __executable_start[], _end[];  // the executable's bounds (GNU ld)

KEET_SANITIZER_HOOK void __asan_unregister_globals(void* globals, long n) {
  static const GlobalsFn real = asan_function("__asan_unregister_globals");
  auto* at = static_cast<char*>(globals);
  if (at >= __executable_start && at < _end) return;
  for_program_globals(real, static_cast<AsanGlobal*>(globals), n);
}
