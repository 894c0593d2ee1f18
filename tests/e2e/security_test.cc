// Security over the wire (docs/design.md section 6): TLS, mutual TLS, and
// bearer tokens with roles and model-id prefixes; every denial with its code
// (UNAUTHENTICATED vs PERMISSION_DENIED); health without a token; no token in
// the server's output. The CA and certificates are made by openssl.
#include <fstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/server_process.h"
#include "tests/scoped_dir.h"

namespace perceptron {
namespace {

using ::testing::HasSubstr;
using testing::RunCommand;
using testing::ServerProcess;

std::string Read(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

// A CA, a server certificate for 127.0.0.1 and localhost, and a client
// certificate.
void MakeCertificates(const std::string& dir) {
  const testing::CommandResult r = RunCommand(
      "bash " PERCEPTRON_SOURCE_DIR "/tests/support/make_certificates.sh " +
      dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
}

std::unique_ptr<client::Client> Connect(const ServerProcess& s,
                                        client::ClientOptions o) {
  o.target = s.target();
  o.timeout = absl::Seconds(10);
  return client::Client::Connect(o);
}

v1::ModelConfig Dim(uint32_t d) {
  v1::ModelConfig c;
  c.set_dimension(d);
  return c;
}

TEST(SecurityTest, TlsAndMutualTls) {
  const testing::ScopedDir certs("certs");
  MakeCertificates(certs.path());
  const std::string& d = certs.path();
  auto server = *ServerProcess::Start(
      {"--tls_cert=" + d + "/server.pem", "--tls_key=" + d + "/server.key"});
  client::ClientOptions tls;
  tls.tls_root_certs = Read(d + "/ca.pem");
  EXPECT_TRUE(Connect(*server, tls)->CreateModel("m", Dim(3)).ok());
  // A plaintext client cannot talk to a TLS server.
  EXPECT_EQ(Connect(*server, {})->GetStatus("m").status().code(),
            absl::StatusCode::kUnavailable);

  auto mutual = *ServerProcess::Start({"--tls_cert=" + d + "/server.pem",
                                       "--tls_key=" + d + "/server.key",
                                       "--tls_client_ca=" + d + "/ca.pem"});
  EXPECT_EQ(Connect(*mutual, tls)->CreateModel("m", Dim(3)).status().code(),
            absl::StatusCode::kUnavailable);  // no client certificate
  client::ClientOptions with_cert = tls;
  with_cert.tls_cert_chain = Read(d + "/client.pem");
  with_cert.tls_private_key = Read(d + "/client.key");
  EXPECT_TRUE(Connect(*mutual, with_cert)->CreateModel("m", Dim(3)).ok());
  client::ClientOptions wrong = tls;  // a certificate from another CA
  wrong.tls_cert_chain = Read(d + "/other.pem");
  wrong.tls_private_key = Read(d + "/other.key");
  EXPECT_EQ(Connect(*mutual, wrong)->GetStatus("m").status().code(),
            absl::StatusCode::kUnavailable);
  // A certificate and key swapped, or a client CA that holds none: the
  // server says which before it starts (not "cannot listen").
  for (const auto& [flags, why] :
       std::vector<std::pair<std::string, std::string>>{
           {absl::StrCat(" --tls_cert=", d, "/server.key --tls_key=", d,
                         "/server.pem"),
            "the TLS certificate (--tls_cert) and key (--tls_key) are not"},
           {absl::StrCat(" --tls_cert=", d, "/server.pem --tls_key=", d,
                         "/server.key --tls_client_ca=", d, "/server.key"),
            "the client CA (--tls_client_ca) holds no PEM certificate"}}) {
    const testing::CommandResult bad = RunCommand(absl::StrCat(
        PERCEPTROND_PATH, " --port=0 --http_port=-1 --durability=none", flags));
    EXPECT_EQ(bad.exit_code, 1) << bad.output;
    EXPECT_THAT(bad.output, HasSubstr(why)) << bad.output;
    EXPECT_THAT(bad.output, ::testing::Not(HasSubstr("cannot listen")));
  }
  // The CLI takes the same options.
  const testing::CommandResult r = RunCommand(
      absl::StrCat(PERCEPTRON_CLI_PATH, " --server=", mutual->target(),
                   " --tls_ca=", d, "/ca.pem", " --tls_cert=", d,
                   "/client.pem --tls_key=", d, "/client.key status m"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("model          m (classic, d=3)"));
  // Files in the wrong flags are named before a call; a plaintext call to a
  // TLS server says what it may need.
  for (const auto& [flags, code, why] :
       std::vector<std::tuple<std::string, int, std::string>>{
           {absl::StrCat(" --tls_ca=", d, "/server.key"), 2,
            "server.key holds no PEM certificate"},
           {absl::StrCat(" --tls_ca=", d, "/ca.pem --tls_cert=", d,
                         "/client.pem"),
            2, "--tls_cert and --tls_key go together"},
           {absl::StrCat(" --tls_ca=", d, "/ca.pem --tls_cert=", d,
                         "/client.pem --tls_key=", d, "/client.pem"),
            2, "client.pem holds no PEM private key"},
           {"", 1, "(if the server speaks TLS: --tls_ca=CA.pem)"}}) {
    const testing::CommandResult bad = RunCommand(absl::StrCat(
        PERCEPTRON_CLI_PATH, " --server=", server->target(), flags, " list"));
    EXPECT_EQ(bad.exit_code, code) << flags << bad.output;
    EXPECT_THAT(bad.output, HasSubstr(why)) << flags;
  }
}

class TokenTest : public ::testing::Test {
 protected:
  static constexpr char kAdmin[] = "admin-token-0123456789abcdef";
  static constexpr char kLearn[] = "learn-token-0123456789abcdef";
  static constexpr char kTeamA[] = "team-a-token-0123456789abcdef";
  static constexpr char kRead[] = "read-token-0123456789abcdef";

  void SetUp() override {
    const std::string tokens = dir_.path() + "/tokens";
    std::ofstream(tokens) << "# token role [prefix ...]\n"
                          << kAdmin << " admin\n"
                          << kLearn << " learn\n"
                          << kTeamA << " learn team-a-\n"
                          << kRead << "\tread\n";
    server_ = *ServerProcess::Start({"--tokens_file=" + tokens});
    admin_ = As(kAdmin);
    ASSERT_TRUE(admin_->CreateModel("team-a-m", Dim(2)).ok());
    ASSERT_TRUE(admin_->CreateModel("team-b-m", Dim(2)).ok());
  }

  std::unique_ptr<client::Client> As(const std::string& token) {
    client::ClientOptions o;
    o.token = token;
    return Connect(*server_, o);
  }

  static client::Example X() {
    client::Example e;
    e.values = {1, -1};
    e.label = 1;
    return e;
  }

  static absl::Status Learn(client::Client& c, const std::string& model) {
    std::unique_ptr<client::LearnSession> s = c.OpenLearnSession(model, {});
    s->AddLabeled(X()).IgnoreError();
    return s->Finish().status();
  }

  testing::ScopedDir dir_{"tokens"};
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<client::Client> admin_;
};

TEST_F(TokenTest, EachRoleMayDoItsCallsAndNoMore) {
  using absl::StatusCode;
  auto read = As(kRead), learn = As(kLearn);
  const std::string m = "team-a-m";
  // read: status, watch, predict, weights, list.
  EXPECT_TRUE(read->GetStatus(m).ok());
  EXPECT_TRUE(read->GetWeights(m).ok());
  EXPECT_TRUE(read->Predict(m, {X()}).ok());
  EXPECT_TRUE(read->Watch(
                      m, absl::Milliseconds(10),
                      [](const v1::ModelStatus&) { return false; },
                      absl::Seconds(10))
                  .ok());
  EXPECT_EQ(read->ListModels()->size(), 2u);
  EXPECT_EQ(Learn(*read, m).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(read->Reveal(m, {{1, 1}}).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(read->Train(m, {X()}, 1).status().code(),
            StatusCode::kPermissionDenied);
  absl::Status s = read->CreateModel("x", Dim(2)).status();
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("needs the admin role; the token has read"));
  // learn: also Learn, Reveal, Train; not create, delete, reset, import,
  // export.
  EXPECT_TRUE(Learn(*learn, m).ok());
  EXPECT_EQ(
      learn->Reveal(m, {{999, 1}})->results(0).error().code(),
      static_cast<int>(StatusCode::kNotFound));  // allowed; the id is unknown
  EXPECT_TRUE(learn->Train(m, {X()}, 1).ok());
  EXPECT_EQ(learn->CreateModel("x", Dim(2)).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(learn->DeleteModel(m).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(learn->ResetModel(m).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(learn->ExportModel(m).status().code(),
            StatusCode::kPermissionDenied);
  const std::string blob = *admin_->ExportModel(m);
  EXPECT_EQ(learn->ImportModel(blob, "copy").status().code(),
            StatusCode::kPermissionDenied);
  // admin: everything.
  EXPECT_TRUE(admin_->ImportModel(blob, "copy").ok());
  EXPECT_TRUE(admin_->ResetModel("copy").ok());
  EXPECT_TRUE(admin_->DeleteModel("copy").ok());
}

TEST_F(TokenTest, MissingOrUnknownTokensAreUnauthenticated) {
  using absl::StatusCode;
  auto none = As(""), bad = As("not-a-known-token-at-all");
  absl::Status s = none->GetStatus("team-a-m").status();
  EXPECT_EQ(s.code(), StatusCode::kUnauthenticated);
  EXPECT_THAT(std::string(s.message()), HasSubstr("no token"));
  EXPECT_EQ(bad->GetStatus("team-a-m").status().code(),
            StatusCode::kUnauthenticated);
  EXPECT_EQ(Learn(*none, "team-a-m").code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(Learn(*bad, "team-a-m").code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(
      bad->Watch(
             "team-a-m", absl::Milliseconds(10),
             [](const v1::ModelStatus&) { return true; }, absl::Seconds(10))
          .code(),
      StatusCode::kUnauthenticated);
  EXPECT_EQ(bad->CreateModel("x", Dim(2)).status().code(),
            StatusCode::kUnauthenticated);
  // Health answers without a token, for probes.
  EXPECT_TRUE(none->CheckHealth(absl::Seconds(10)).ok());
  // The CLI reads the token from a file or PERCEPTRON_TOKEN.
  const std::string token_file = dir_.path() + "/my.token";
  std::ofstream(token_file) << kRead << "\n";
  testing::CommandResult r = RunCommand(
      absl::StrCat(PERCEPTRON_CLI_PATH, " --server=", server_->target(),
                   " status team-a-m"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("UNAUTHENTICATED"));
  r = RunCommand(
      absl::StrCat(PERCEPTRON_CLI_PATH, " --server=", server_->target(),
                   " --token_file=", token_file, " status team-a-m"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = RunCommand(absl::StrCat("PERCEPTRON_TOKEN=", kRead, " ",
                              PERCEPTRON_CLI_PATH,
                              " --server=", server_->target(), " list"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // No token appears in what the server writes.
  const std::string err = server_->StderrText();
  for (const char* t : {kAdmin, kLearn, kTeamA, kRead})
    EXPECT_EQ(err.find(t), std::string::npos);
  EXPECT_EQ(err.find("not-a-known-token"), std::string::npos);
}

TEST_F(TokenTest, PrefixLimitedTokensTouchOnlyTheirModels) {
  using absl::StatusCode;
  auto team_a = As(kTeamA);
  EXPECT_TRUE(Learn(*team_a, "team-a-m").ok());
  absl::Status s = Learn(*team_a, "team-b-m");
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("does not cover model team-b-m"));
  EXPECT_EQ(team_a->GetStatus("team-b-m").status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_TRUE(team_a->GetStatus("team-a-m").ok());
  // Listing shows only the models the token covers.
  absl::StatusOr<std::vector<v1::Model>> listed = team_a->ListModels();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].model_id(), "team-a-m");
}

}  // namespace
}  // namespace perceptron
