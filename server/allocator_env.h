// tcmalloc's settings that it reads from the environment once, as the
// process starts and before main runs (docs/design.md section 7). The one set
// here is the batch of small objects tcmalloc moves at a time between a
// thread's cache and its shared caches (TCMALLOC_TRANSFER_NUM_OBJ, 32 by
// default): its transfer cache keeps up to 64 such batches of every size of
// object, which freed objects fill and nothing but new allocations of the
// same size empties. After a burst of streams that went away, those batches
// are most of what the server cannot give back; smaller ones hold less.
// Setting it takes a second start of the program: the same process (its
// pid, open files and arguments) made anew by execv with the variable in its
// environment.
//
//   absl::ParseCommandLine(argc, argv);
//   perceptron::server::StartWithTransferBatch(
//       "perceptrond", argv, absl::GetFlag(FLAGS_allocator_transfer_objects));
#ifndef PERCEPTRON_SERVER_ALLOCATOR_ENV_H_
#define PERCEPTRON_SERVER_ALLOCATOR_ENV_H_

#include <cstdint>

namespace perceptron::server {

// The most objects a transfer batch may be set to.
inline constexpr uint32_t kMaxTransferObjects = 1024;

// Where the program's allocator is tcmalloc, `objects` is not 0 and the
// environment does not set TCMALLOC_TRANSFER_NUM_OBJ already (a value there
// is the user's, and is kept), runs the program again (execv of its own file,
// /proc/self/exe's target, with `argv`, in this process) with
// TCMALLOC_TRANSFER_NUM_OBJ=objects, and does not return. Returns otherwise,
// and when the program cannot be run again (it then says why on stderr,
// naming `program`, and goes on with tcmalloc's own batch). Call before any
// thread starts and before anything is written to stdout.
void StartWithTransferBatch(const char* program, char** argv, uint32_t objects);

// The batch tcmalloc took as this process started: the environment's
// TCMALLOC_TRANSFER_NUM_OBJ, else its default (32); 0 where the allocator is
// not tcmalloc, or the environment's value is not 1 to kMaxTransferObjects.
uint32_t TransferBatch();

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_ALLOCATOR_ENV_H_
