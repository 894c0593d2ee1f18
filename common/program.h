// What both binaries (perceptrond and perceptron) set up first: a usage line,
// --help that lists the program's own flags with their defaults, and
// --version naming the release and the wire contract.
//
//   perceptron::SetProgramUsage("perceptrond", "server/main.cc", kUsage);
//   absl::ParseCommandLine(argc, argv);
#ifndef PERCEPTRON_COMMON_PROGRAM_H_
#define PERCEPTRON_COMMON_PROGRAM_H_

#include <string>

#include "absl/strings/string_view.h"

namespace perceptron {

// `flags_file`: the end of the path of the source file that defines the
// program's flags (Abseil's --help otherwise looks for a file named after
// the program, and finds none).
void SetProgramUsage(const std::string& program, const std::string& flags_file,
                     absl::string_view usage);

// "PROGRAM RELEASE (wire contract perceptron.v1.PerceptronService)".
std::string VersionLine(const std::string& program);

}  // namespace perceptron

#endif  // PERCEPTRON_COMMON_PROGRAM_H_
