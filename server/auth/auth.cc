#include "server/auth/auth.h"

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace perceptron::server {

absl::string_view RoleName(Role r) {
  switch (r) {
    case Role::kRead:
      return "read";
    case Role::kLearn:
      return "learn";
    case Role::kAdmin:
      return "admin";
  }
  return "?";
}

absl::StatusOr<std::unique_ptr<Authorizer>> Authorizer::Load(
    const std::string& path) {
  std::ifstream in(path);
  if (!in)
    return absl::NotFoundError(
        absl::StrCat("cannot read the tokens file ", path));
  std::stringstream text;
  text << in.rdbuf();
  return Parse(text.str(), path);
}

absl::StatusOr<std::unique_ptr<Authorizer>> Authorizer::Parse(
    absl::string_view text, absl::string_view name) {
  auto a = std::unique_ptr<Authorizer>(new Authorizer());
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    line = absl::StripAsciiWhitespace(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    std::vector<absl::string_view> f =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (f.size() < 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ":", number, ": expected TOKEN ROLE [PREFIX ...]"));
    }
    Grant g;
    if (f[1] == "read") {
      g.role = Role::kRead;
    } else if (f[1] == "learn") {
      g.role = Role::kLearn;
    } else if (f[1] == "admin") {
      g.role = Role::kAdmin;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ":", number, ": role \"", f[1],
                       "\" is not read, learn or admin"));
    }
    if (f[0].size() < 16) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ":", number, ": the token is shorter than 16 characters"));
    }
    for (size_t k = 2; k < f.size(); ++k) g.prefixes.emplace_back(f[k]);
    if (!a->grants_.emplace(std::string(f[0]), std::move(g)).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ":", number, ": the token is listed twice"));
    }
  }
  if (a->grants_.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": no tokens"));
  }
  return a;
}

const Authorizer::Grant* Authorizer::Find(
    absl::string_view authorization) const {
  absl::string_view token = authorization;
  if (!absl::ConsumePrefix(&token, "Bearer ") &&
      !absl::ConsumePrefix(&token, "bearer ")) {
    return nullptr;
  }
  auto it = grants_.find(absl::StripAsciiWhitespace(token));
  return it == grants_.end() ? nullptr : &it->second;
}

bool Authorizer::PrefixOk(const Grant& g, absl::string_view model_id) {
  if (g.prefixes.empty() || model_id.empty()) return true;
  for (const std::string& p : g.prefixes) {
    if (absl::StartsWith(model_id, p)) return true;
  }
  return false;
}

absl::Status Authorizer::CheckHeader(absl::string_view authorization,
                                     Role needed,
                                     absl::string_view model_id) const {
  const Grant* g = Find(authorization);
  if (g == nullptr) {
    return absl::UnauthenticatedError(
        authorization.empty() ? "no token: send \"authorization: Bearer TOKEN\""
                              : "the token is not valid");
  }
  if (g->role < needed) {
    return absl::PermissionDeniedError(
        absl::StrCat("this call needs the ", RoleName(needed),
                     " role; the token has ", RoleName(g->role)));
  }
  if (!PrefixOk(*g, model_id)) {
    return absl::PermissionDeniedError(
        absl::StrCat("the token does not cover model ", model_id));
  }
  return absl::OkStatus();
}

absl::Status Authorizer::Check(
    const std::multimap<std::string, std::string>& metadata, Role needed,
    absl::string_view model_id) const {
  auto it = metadata.find("authorization");
  return CheckHeader(it == metadata.end() ? "" : it->second, needed, model_id);
}

bool Authorizer::Covers(absl::string_view authorization,
                        absl::string_view model_id) const {
  const Grant* g = Find(authorization);
  return g != nullptr && PrefixOk(*g, model_id);
}

}  // namespace perceptron::server
