#include "io/dynlib.h"

#include <dlfcn.h>

#include <filesystem>

namespace keet::io {

Result<void*> open_library(const std::string& name_or_path) {
  void* lib = dlopen(name_or_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    return fail(ExitCode::Dependency, why ? why : name_or_path + ": cannot be loaded");
  }
  return lib;
}

void* find_symbol(void* library, const char* name) { return dlsym(library, name); }

std::string executable_dir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "" : exe.parent_path().string();
}

}  // namespace keet::io
