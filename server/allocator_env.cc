#include "server/allocator_env.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

// gperftools' C interface, weak: null unless tcmalloc is linked into the
// program (as server/memory.cc finds it).
extern "C" int MallocExtension_GetNumericProperty(const char* property,
                                                  size_t* value)
    __attribute__((weak));

namespace perceptron::server {
namespace {

constexpr char kVariable[] = "TCMALLOC_TRANSFER_NUM_OBJ";
// gperftools' own batch when the variable is not set.
constexpr uint32_t kTcmallocDefault = 32;

}  // namespace

void StartWithTransferBatch(const char* program, char** argv,
                            uint32_t objects) {
  if (MallocExtension_GetNumericProperty == nullptr || objects == 0 ||
      std::getenv(kVariable) != nullptr) {
    return;
  }
  const std::string value = std::to_string(objects);
  // The program's own path, not /proc/self/exe itself: the kernel names the
  // process (ps, top, pkill) after the file it runs.
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path));
  int error = 0;
  if (n <= 0 || static_cast<size_t>(n) >= sizeof(path)) {
    error = n < 0 ? errno : ENAMETOOLONG;
  } else {
    path[n] = '\0';
    if (setenv(kVariable, value.c_str(), 1) != 0) return;
    std::fflush(nullptr);
    execv(path, argv);
    // Still here: the program could not be run again.
    error = errno;
    unsetenv(kVariable);
  }
  std::fprintf(stderr,
               "%s: could not start again with %s=%s (%s); tcmalloc keeps its "
               "own batch of %u\n",
               program, kVariable, value.c_str(), std::strerror(error),
               kTcmallocDefault);
}

uint32_t TransferBatch() {
  if (MallocExtension_GetNumericProperty == nullptr) return 0;
  const char* set = std::getenv(kVariable);
  if (set == nullptr) return kTcmallocDefault;
  // As tcmalloc reads it (strtol); 0 for a value it would not take.
  const long v = std::strtol(set, nullptr, 10);
  return v > 0 && v <= kMaxTransferObjects ? static_cast<uint32_t>(v) : 0;
}

}  // namespace perceptron::server
