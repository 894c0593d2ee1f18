// What both binaries (perceptrond and perceptron) set up first: a usage line,
// --help that lists the program's own flags with their defaults, and
// --version naming the release and the wire contract.
//
//   perceptron::SetProgramUsage("perceptrond", "server/main.cc", kUsage);
//   absl::ParseCommandLine(argc, argv);
#ifndef PERCEPTRON_COMMON_PROGRAM_H_
#define PERCEPTRON_COMMON_PROGRAM_H_

#include <signal.h>

#include <string>

#include "absl/strings/string_view.h"

namespace perceptron {

// `flags_file`: the last two components of the path of the source file that
// defines the program's flags, e.g. "server/main.cc" (Abseil's --help
// otherwise looks for a file named after the program, and finds none; it
// matches the name as normalized here, to its last two components).
void SetProgramUsage(const std::string& program, const std::string& flags_file,
                     absl::string_view usage);

// "PROGRAM RELEASE (wire contract perceptron.v1.PerceptronService)".
std::string VersionLine(const std::string& program);

// Blocks SIGTERM and SIGINT in the calling thread and every thread it starts
// afterwards (call it before starting any), so that only WaitForStopSignal
// takes them, never an asynchronous handler.
void BlockStopSignals();
// Waits for SIGTERM or SIGINT (after BlockStopSignals) and returns which.
int WaitForStopSignal();

}  // namespace perceptron

#endif  // PERCEPTRON_COMMON_PROGRAM_H_
