#include "client/cli/common.h"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "client/cli/flags.h"
#include "core/quoted.h"

namespace perceptron::client::cli {

int Fail(const absl::Status& s) {
  // A plaintext call to a server that speaks TLS ends as a closed (or reset)
  // socket.
  const bool maybe_tls = s.code() == absl::StatusCode::kUnavailable &&
                         absl::GetFlag(FLAGS_tls_ca).empty() &&
                         (absl::StrContains(s.message(), "Socket closed") ||
                          absl::StrContains(s.message(), "reset by peer"));
  std::fprintf(stderr, "perceptron: %s: %s%s\n",
               absl::StatusCodeToString(s.code()).c_str(),
               std::string(s.message()).c_str(),
               maybe_tls ? " (if the server speaks TLS: --tls_ca=CA.pem)" : "");
  return 1;
}

// A local failure (a file, the data): the message alone, no gRPC code.
int FailLocal(const absl::Status& s) {
  std::fprintf(stderr, "perceptron: %s\n", std::string(s.message()).c_str());
  return 1;
}

// The reason the last system call failed, as text.
std::string Errno() { return std::strerror(errno); }

namespace {
std::string& UsageCommand() {
  static std::string* command = new std::string;
  return *command;
}
std::set<std::string>& GivenFlags() {
  static auto* given = new std::set<std::string>;
  return *given;
}
}  // namespace

void SetUsageCommand(const std::string& command) { UsageCommand() = command; }
bool FlagGiven(const std::string& name) { return GivenFlags().contains(name); }
void SetFlagGiven(const std::string& name) { GivenFlags().insert(name); }

// A usage error: one line, and where the usage is: the command's, once the
// command is known.
int Usage(const std::string& why) {
  if (!UsageCommand().empty()) {
    std::fprintf(stderr,
                 "perceptron: %s (perceptron help %s shows its usage and "
                 "flags)\n",
                 why.c_str(), UsageCommand().c_str());
    return 2;
  }
  std::fprintf(stderr,
               "perceptron: %s (perceptron --help shows the commands and "
               "flags)\n",
               why.c_str());
  return 2;
}

// The whole of a small file, or exits with a message.
std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "perceptron: cannot read %s: %s\n", path.c_str(),
                 std::strerror(errno));
    std::exit(1);
  }
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

namespace {

// A PEM file a TLS flag names: read whole, or exits with a message (2 when
// it holds no `marker`, a certificate where a key is, say, which gRPC would
// only log before failing to connect).
std::string ReadPem(const char* flag, const std::string& path,
                    absl::string_view marker, absl::string_view what) {
  std::string pem = ReadSmallFile(path);
  if (!absl::StrContains(pem, marker)) {
    std::fprintf(stderr, "perceptron: --%s=%s holds no PEM %s (%s)\n", flag,
                 path.c_str(), std::string(what).c_str(),
                 std::string(marker).c_str());
    std::exit(2);
  }
  return pem;
}

}  // namespace

std::unique_ptr<Client> Connect(bool own_connection) {
  ClientOptions options = Options();
  options.own_connection = own_connection;
  return Client::Connect(options);
}

namespace {

// Why `target` (of --`flag`) is not an address gRPC can dial, or "": a
// HOST:PORT ([V6]:PORT for an IPv6 address), or a gRPC target with its scheme
// (unix:PATH, dns:..., ipv4:..., ipv6:...). Said before any connection is
// tried: gRPC would log its own errors and wait out --connect_timeout.
std::string BadTarget(absl::string_view flag, absl::string_view target) {
  const std::string what =
      absl::StrCat("--", flag, "=", Quoted(target), " is not HOST:PORT");
  if (target.empty()) return absl::StrCat("--", flag, " is empty");
  for (const char c : target) {
    if (absl::ascii_isspace(c) || absl::ascii_iscntrl(c)) return what;
  }
  for (absl::string_view scheme :
       {"unix:", "unix-abstract:", "dns:", "ipv4:", "ipv6:", "vsock:"}) {
    if (absl::StartsWith(target, scheme)) {
      return target.size() > scheme.size() ? "" : what;
    }
  }
  const size_t colon = target.rfind(':');
  if (colon == absl::string_view::npos || colon == 0) return what;
  const absl::string_view host = target.substr(0, colon);
  uint32_t port = 0;
  if (!absl::SimpleAtoi(target.substr(colon + 1), &port) || port == 0 ||
      port > 65535 || !absl::ascii_isdigit(target[colon + 1])) {
    return absl::StrCat(what, " (the port is a number from 1 to 65535)");
  }
  if (absl::StartsWith(host, "[") != absl::EndsWith(host, "]") ||
      (!absl::StartsWith(host, "[") && absl::StrContains(host, ':'))) {
    return absl::StrCat(what,
                        " (an IPv6 address goes in brackets: [::1]:50051)");
  }
  return "";
}

}  // namespace

ClientOptions Options() {
  for (const auto& [flag, targets] :
       std::vector<std::pair<absl::string_view, std::vector<std::string>>>{
           {"server", {absl::GetFlag(FLAGS_server)}},
           {"shards", absl::GetFlag(FLAGS_shards)},
           {"live",
            absl::GetFlag(FLAGS_live).empty()
                ? std::vector<std::string>()
                : std::vector<std::string>{absl::GetFlag(FLAGS_live)}}}) {
    for (const std::string& target : targets) {
      if (std::string why = BadTarget(flag, target); !why.empty()) {
        std::exit(Usage(why));
      }
    }
  }
  ClientOptions options;
  options.target = absl::GetFlag(FLAGS_server);
  options.connect_timeout = absl::GetFlag(FLAGS_connect_timeout);
  options.timeout = absl::GetFlag(FLAGS_timeout);
  constexpr absl::string_view kCertificate = "-----BEGIN CERTIFICATE-----";
  if (!absl::GetFlag(FLAGS_tls_ca).empty()) {
    options.tls_root_certs = ReadPem("tls_ca", absl::GetFlag(FLAGS_tls_ca),
                                     kCertificate, "certificate");
  }
  if (absl::GetFlag(FLAGS_tls_cert).empty() !=
      absl::GetFlag(FLAGS_tls_key).empty()) {
    std::exit(Usage("--tls_cert and --tls_key go together"));
  }
  if (!absl::GetFlag(FLAGS_tls_cert).empty()) {
    options.tls_cert_chain = ReadPem("tls_cert", absl::GetFlag(FLAGS_tls_cert),
                                     kCertificate, "certificate");
    options.tls_private_key = ReadPem("tls_key", absl::GetFlag(FLAGS_tls_key),
                                      "PRIVATE KEY-----", "private key");
  }
  if (!absl::GetFlag(FLAGS_token_file).empty()) {
    options.token = std::string(absl::StripAsciiWhitespace(
        ReadSmallFile(absl::GetFlag(FLAGS_token_file))));
  } else if (const char* token = std::getenv("PERCEPTRON_TOKEN")) {
    options.token = token;
  }
  if (!IsHeaderValue(options.token)) {
    std::fprintf(stderr,
                 "perceptron: the token (--token_file or PERCEPTRON_TOKEN) "
                 "holds a byte that is not printable ASCII; a bearer token "
                 "is sent as a header, which takes only those\n");
    std::exit(2);
  }
  return options;
}

const char* AlgorithmText(v1::Algorithm a) {
  switch (a) {
    case v1::MARGIN:
      return "margin";
    case v1::AVERAGED:
      return "averaged";
    case v1::VOTED:
      return "voted";
    case v1::KERNEL:
      return "kernel";
    default:
      return "classic";
  }
}

absl::Status WithCreateHint(const absl::Status& s, absl::string_view verb) {
  if (s.code() != absl::StatusCode::kNotFound) return s;
  return absl::NotFoundError(
      absl::StrCat(s.message(), " (", verb, " --create makes it)"));
}

std::string ShapeText(const v1::ModelConfig& c) {
  std::string out;
  if (c.hash_bits() > 0) {
    out = absl::StrCat("hash_bits=", c.hash_bits());
    if (c.interactions_size() > 0) {
      absl::StrAppend(&out, ", -q ", absl::StrJoin(c.interactions(), ","));
    }
  } else {
    out = absl::StrCat("d=", c.dimension());
    if (c.feature_names_size() > 0) absl::StrAppend(&out, " by name");
  }
  if (c.classes_size() > 0)
    absl::StrAppend(&out, ", ", c.classes_size(), " classes");
  return out;
}

std::string BoundText(const v1::ModelStats& s) {
  if (s.bound_available()) return absl::StrFormat("%.1f", s.bound());
  // With no comparator: the certificate's, once it has a solution.
  if (s.certificate().available()) {
    return absl::StrFormat("U %.1f (certificate)", s.certificate().upper());
  }
  const v1::Certificate::State state = s.certificate().state();
  return state == v1::Certificate::KEEPING || state == v1::Certificate::FREEZING
             ? "n/a yet"
             : "n/a";
}

namespace {

// Why BoundText is n/a, with a leading space.
std::string WhyNot(const v1::ModelStats& s) {
  switch (s.certificate().state()) {
    case v1::Certificate::KEEPING:
    case v1::Certificate::FREEZING:
      return " (no comparator; the certificate's first solve is running: "
             "status shows it)";
    case v1::Certificate::OFF:
    case v1::Certificate::FROZEN:
      return " (no comparator; the certificate is off: status says why)";
    default:
      return " (no comparator)";
  }
}

}  // namespace

v1::ModelStats AwaitCertificate(Client& client, const std::string& model,
                                const v1::ModelStats& stats,
                                absl::Duration timeout) {
  auto waiting = [](const v1::ModelStats& s) {
    const v1::Certificate& c = s.certificate();
    return !s.bound_available() &&
           (c.state() == v1::Certificate::KEEPING ||
            c.state() == v1::Certificate::FREEZING) &&
           (!c.available() || c.solved() < c.examples() || !c.converged());
  };
  if (!waiting(stats)) return stats;
  v1::ModelStats latest = stats;
  // Whatever the watch ends with (the time, an error), `latest` stands.
  client
      .Watch(
          model, absl::Milliseconds(20),
          [&](const v1::ModelStatus& st) {
            latest = st.stats();
            return waiting(latest);
          },
          timeout)
      .IgnoreError();
  return latest;
}

std::string BoundSaid(const v1::ModelStats& s) {
  const std::string bound = BoundText(s);
  if (s.bound_available() || s.certificate().available()) return bound;
  return bound + WhyNot(s);
}

// The shortest text that reads back as `v`.
std::string Shortest(double v) {
  char text[32];
  const auto end = std::to_chars(text, text + sizeof(text), v).ptr;
  return std::string(text, end);
}

std::string SizeText(uint64_t bytes) {
  if (bytes < 1024) return absl::StrCat(bytes, " bytes");
  const char* units[] = {"KiB", "MiB", "GiB"};
  double v = bytes / 1024.0;
  int u = 0;
  while (v >= 1024 && u < 2) {
    v /= 1024;
    ++u;
  }
  return absl::StrFormat("%.1f %s", v, units[u]);
}

bool ShowProgress() {
  const std::string p = absl::GetFlag(FLAGS_progress);
  if (p == "yes") return true;
  if (p == "no") return false;
  return isatty(STDERR_FILENO);
}

}  // namespace perceptron::client::cli
