#include "server/http/http.h"

#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "google/protobuf/util/json_util.h"
#include "server/http/web_page.h"
#include "server/model/model_id.h"
#include "server/ops/model_ops.h"

namespace perceptron::server {
namespace {

// The heaviest features /api/v1/models/ID/features lists (the page's).
constexpr uint32_t kPageFeatures = 10;

struct Reply {
  int code = 200;
  std::string content_type = "application/json";
  std::string body;
};

// `text` as a JSON string's contents: quotes, backslashes and every byte
// outside printable ASCII escaped (a byte >= 0x80 as \u00XX: the messages
// quoted here are ASCII, so that only keeps stray bytes from breaking JSON).
std::string JsonText(absl::string_view text) {
  std::string out;
  for (const unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c < 0x20 || c >= 0x7f) {
      absl::StrAppend(&out, "\\u", absl::Hex(c, absl::kZeroPad4));
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

Reply Error(int code, absl::string_view message) {
  Reply r;
  r.code = code;
  r.body = absl::StrCat("{\"error\":\"", JsonText(message), "\"}\n");
  return r;
}

// A model id, a model that is not there, a malformed request: the status's
// own message (the one gRPC answers with); anything else without detail.
Reply FromStatus(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kNotFound:
      return Error(404, s.message());
    case absl::StatusCode::kUnauthenticated:
      return Error(401, "a bearer token is needed");
    case absl::StatusCode::kPermissionDenied:
      return Error(403, "the token does not cover this");
    case absl::StatusCode::kInvalidArgument:
      return Error(400, s.message());
    default:
      return Error(500, "internal error");
  }
}

absl::StatusOr<std::string> ToJson(const google::protobuf::Message& m) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string out;
  const auto s = google::protobuf::util::MessageToJsonString(m, &out, options);
  if (!s.ok()) return absl::InternalError(std::string(s.message()));
  return out;
}

MHD_Result Send(MHD_Connection* conn, const Reply& r) {
  MHD_Response* response = MHD_create_response_from_buffer(
      r.body.size(), const_cast<char*>(r.body.data()), MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, "Content-Type", r.content_type.c_str());
  MHD_add_response_header(response, "Cache-Control", "no-store");
  MHD_add_response_header(response, "X-Content-Type-Options", "nosniff");
  if (r.code == 401) {
    MHD_add_response_header(response, "WWW-Authenticate", "Bearer");
  }
  if (r.code == 405) MHD_add_response_header(response, "Allow", "GET, HEAD");
  const MHD_Result queued =
      MHD_queue_response(conn, static_cast<unsigned>(r.code), response);
  MHD_destroy_response(response);  // HEAD: libmicrohttpd sends no body
  return queued;
}

// With a client CA: whether the connection's client certificate chains to it.
bool ClientVerified(MHD_Connection* conn) {
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
  if (info == nullptr || info->tls_session == nullptr) return false;
  auto session = static_cast<gnutls_session_t>(info->tls_session);
  unsigned int status = 0;
  return gnutls_certificate_type_get(session) == GNUTLS_CRT_X509 &&
         gnutls_certificate_verify_peers2(session, &status) == 0 && status == 0;
}

// The value of a hexadecimal digit.
int HexValue(char c) {
  return absl::ascii_isdigit(c) ? c - '0' : absl::ascii_tolower(c) - 'a' + 10;
}

// Decodes a path or a query's value in place as libmicrohttpd does (each %HH
// its byte), except %00, which stays as it is: libmicrohttpd hands on a C
// string, which would end at a decoded zero, and /api/v1/models/a%00b would
// have read model a. Left as "%00", the id has a '%' and is refused.
size_t Unescape(void*, MHD_Connection*, char* s) {
  char* out = s;
  for (const char* in = s; *in != '\0';) {
    if (in[0] == '%' && absl::ascii_isxdigit(in[1]) &&
        absl::ascii_isxdigit(in[2]) && !(in[1] == '0' && in[2] == '0')) {
      *out++ = static_cast<char>(HexValue(in[1]) * 16 + HexValue(in[2]));
      in += 3;
    } else {
      *out++ = *in++;
    }
  }
  *out = '\0';
  return static_cast<size_t>(out - s);
}

// One handler for every path: routes, checks the token, counts, answers.
class Handler {
 public:
  explicit Handler(HttpServer* server) : server_(server) {}

  // libmicrohttpd's request callback. `url` is the decoded path as sent
  // (never resolved against a directory: no file is served, and dots in a
  // model id stay as they are).
  static MHD_Result Access(void* cls, MHD_Connection* conn, const char* url,
                           const char* method, const char*, const char*,
                           size_t* upload_size, void**) {
    auto* server = static_cast<HttpServer*>(cls);
    if (server->verify_clients() && !ClientVerified(conn)) {
      return MHD_NO;  // closes the connection, as the gRPC port refuses it
    }
    Handler handler(server);
    std::string name;
    Reply reply;
    const std::string_view m = method;
    if (m != "GET" && m != "HEAD") {
      name = "other";
      reply = Error(405, "method not allowed");
    } else if (*upload_size != 0) {
      name = "other";
      reply = Error(400, "a GET has no body");
    } else {
      const char* header =
          MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
      reply = handler.Route(url ? url : "/", header ? header : "", &name);
    }
    server->metrics()->CountHttp(name, reply.code);
    return Send(conn, reply);
  }

 private:
  absl::Status Allow(const std::string& authorization,
                     absl::string_view model_id) const {
    if (server_->auth() == nullptr) return absl::OkStatus();
    return server_->auth()->CheckHeader(authorization, Role::kRead, model_id);
  }

  Reply Route(const std::string& path, const std::string& authorization,
              std::string* handler) {
    if (path == "/healthz") {
      *handler = "/healthz";
      Reply r;
      r.content_type = "text/plain";
      if (server_->serving()) {
        r.body = "SERVING\n";
        if (std::string note = server_->health_note(); !note.empty()) {
          absl::StrAppend(&r.body, note, "\n");
        }
      } else {
        r.code = 503;
        r.body = "NOT_SERVING\n";
      }
      return r;
    }
    if (path == "/" || path == "/index.html") {
      // The page is static; its data requests carry the token.
      // Not `*handler = "/"`, which GCC 12 warns of as a false overlap of
      // memcpy's arguments (-Wrestrict, GCC bug 105329).
      handler->assign(1, '/');
      Reply r;
      r.content_type = "text/html; charset=utf-8";
      r.body = std::string(LivePage());
      return r;
    }
    if (path == "/metrics") {
      *handler = "/metrics";
      if (absl::Status s = Allow(authorization, ""); !s.ok()) {
        return FromStatus(s);
      }
      Reply r;
      r.content_type = "text/plain; version=0.0.4; charset=utf-8";
      r.body = server_->metrics()->Render(Visible(authorization));
      return r;
    }
    if (path == "/api/v1/server") {
      *handler = "/api/v1/server";
      if (absl::Status s = Allow(authorization, ""); !s.ok()) {
        return FromStatus(s);
      }
      v1::ServerStatus status;
      if (!server_->FillServerStatus(&status)) return NotFound(handler);
      absl::StatusOr<std::string> json = ToJson(status);
      if (!json.ok()) return FromStatus(json.status());
      Reply r;
      r.body = *std::move(json);
      return r;
    }
    absl::string_view rest = path;
    if (absl::ConsumePrefix(&rest, "/api/v1/models")) {
      if (absl::Status s = Allow(authorization, ""); !s.ok()) {
        return FromStatus(s);
      }
      if (rest.empty() || rest == "/") {
        *handler = "/api/v1/models";
        return ListModels(authorization);
      }
      if (!absl::ConsumePrefix(&rest, "/")) return NotFound(handler);
      const bool history = absl::ConsumeSuffix(&rest, "/history");
      const bool features = !history && absl::ConsumeSuffix(&rest, "/features");
      *handler = history    ? "/api/v1/models/{id}/history"
                 : features ? "/api/v1/models/{id}/features"
                            : "/api/v1/models/{id}";
      const std::string id(rest);
      if (absl::Status s = ValidateModelId(id); !s.ok()) return FromStatus(s);
      if (absl::Status s = Allow(authorization, id); !s.ok()) {
        return FromStatus(s);
      }
      absl::StatusOr<std::shared_ptr<ModelEntry>> entry =
          server_->registry()->Get(id);
      if (!entry.ok()) return FromStatus(entry.status());
      absl::Status filled;
      std::unique_ptr<google::protobuf::Message> message;
      if (history) {
        auto h = std::make_unique<v1::History>();
        filled = FillHistory(**entry, h.get());
        message = std::move(h);
      } else if (features) {
        // The heaviest features with their names, as the page shows them.
        auto w = std::make_unique<v1::Weights>();
        filled = FillWeights(**entry, w.get(), kPageFeatures);
        message = std::move(w);
      } else {
        auto st = std::make_unique<v1::ModelStatus>();
        filled = FillStatus(**entry, st.get());
        message = std::move(st);
      }
      if (!filled.ok()) return FromStatus(filled);
      absl::StatusOr<std::string> json = ToJson(*message);
      if (!json.ok()) return FromStatus(json.status());
      Reply r;
      r.body = *std::move(json);
      return r;
    }
    return NotFound(handler);
  }

  Reply NotFound(std::string* handler) {
    *handler = "other";
    // A path the server does not serve: say which it does.
    return Error(404,
                 "not found: the server serves / (the live page), /metrics, "
                 "/healthz and the JSON API /api/v1/server, /api/v1/models, "
                 "/api/v1/models/ID, /api/v1/models/ID/history and "
                 "/api/v1/models/ID/features");
  }

  std::function<bool(absl::string_view)> Visible(
      const std::string& authorization) const {
    if (server_->auth() == nullptr) return nullptr;
    const Authorizer* auth = server_->auth();
    return [auth, authorization](absl::string_view id) {
      return auth->Covers(authorization, id);
    };
  }

  Reply ListModels(const std::string& authorization) {
    std::function<bool(absl::string_view)> visible = Visible(authorization);
    std::string body = "{\"models\":[";
    bool first = true;
    for (const std::shared_ptr<ModelEntry>& entry :
         server_->registry()->All()) {
      if (visible && !visible(entry->id)) continue;
      v1::ModelStatus status;
      if (!FillStatus(*entry, &status).ok()) continue;  // deleted meanwhile
      absl::StatusOr<std::string> json = ToJson(status);
      if (!json.ok()) return FromStatus(json.status());
      absl::StrAppend(&body, first ? "" : ",", *json);
      first = false;
    }
    absl::StrAppend(&body, "]}\n");
    Reply r;
    r.body = std::move(body);
    return r;
  }

  HttpServer* server_;
};

// libmicrohttpd's error log: the first message is kept for the start-up
// error; later ones (a client's failed TLS handshake, say) are dropped.
void KeepError(void* cls, const char* format, va_list ap) {
  char text[512];
  std::vsnprintf(text, sizeof(text), format, ap);
  std::string message = text;
  while (!message.empty() && message.back() == '\n') message.pop_back();
  static_cast<HttpServer*>(cls)->KeepFirstError(message);
}

// A listening socket on host:port (no SO_REUSEPORT: a second server on a
// taken port fails here), or why not.
absl::StatusOr<int> Listen(const std::string& host, int port,
                           const std::string& address) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  std::string bare = host;
  if (absl::StartsWith(bare, "[") && absl::EndsWith(bare, "]")) {
    bare = bare.substr(1, bare.size() - 2);
  }
  const std::string service = absl::StrCat(port);
  if (int e = getaddrinfo(bare.c_str(), service.c_str(), &hints, &found);
      e != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve HTTP on ", address, ": ", gai_strerror(e)));
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> list(found, &freeaddrinfo);
  const int fd = socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC,
                        found->ai_protocol);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat("cannot serve HTTP on ", address,
                                               ": ", std::strerror(errno)));
  }
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, found->ai_addr, found->ai_addrlen) != 0 ||
      listen(fd, SOMAXCONN) != 0) {
    const int e = errno;
    close(fd);
    return absl::UnavailableError(
        absl::StrCat("cannot serve HTTP on ", address, ": ", std::strerror(e)));
  }
  return fd;
}

int BoundPort(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof(a);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return -1;
  if (a.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<sockaddr_in6*>(&a)->sin6_port);
  }
  return ntohs(reinterpret_cast<sockaddr_in*>(&a)->sin_port);
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    const HttpOptions& o, Registry* registry, Metrics* metrics,
    const Authorizer* auth) {
  std::unique_ptr<HttpServer> server(new HttpServer(registry, metrics, auth));
  server->tls_ = !o.tls_cert_pem.empty();
  server->tls_cert_pem_ = o.tls_cert_pem;
  server->tls_key_pem_ = o.tls_key_pem;
  server->tls_client_ca_pem_ = server->tls_ ? o.tls_client_ca_pem : "";
  server->health_note_ = o.health_note;
  server->server_status_ = o.server_status;
  const std::string address =
      absl::StrContains(o.host, ':') && !absl::StartsWith(o.host, "[")
          ? absl::StrCat("[", o.host, "]:", o.port)
          : absl::StrCat(o.host, ":", o.port);
  absl::StatusOr<int> fd = Listen(o.host, o.port, address);
  if (!fd.ok()) return fd.status();
  server->port_ = BoundPort(*fd);

  unsigned int flags =
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
  std::vector<MHD_OptionItem> options = {
      {MHD_OPTION_LISTEN_SOCKET, *fd, nullptr},
      {MHD_OPTION_THREAD_POOL_SIZE,
       static_cast<intptr_t>(std::max(1, o.threads)), nullptr},
      {MHD_OPTION_CONNECTION_TIMEOUT, 60, nullptr},
      {MHD_OPTION_EXTERNAL_LOGGER, reinterpret_cast<intptr_t>(&KeepError),
       server.get()},
      {MHD_OPTION_UNESCAPE_CALLBACK, reinterpret_cast<intptr_t>(&Unescape),
       nullptr},
  };
  if (server->tls_) {
    flags |= MHD_USE_TLS;
    options.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0,
                       const_cast<char*>(server->tls_cert_pem_.c_str())});
    options.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0,
                       const_cast<char*>(server->tls_key_pem_.c_str())});
    if (server->verify_clients()) {
      options.push_back(
          {MHD_OPTION_HTTPS_MEM_TRUST, 0,
           const_cast<char*>(server->tls_client_ca_pem_.c_str())});
    }
  }
  options.push_back({MHD_OPTION_END, 0, nullptr});
  server->daemon_ = MHD_start_daemon(
      flags, 0, nullptr, nullptr, &Handler::Access, server.get(),
      MHD_OPTION_ARRAY, options.data(), MHD_OPTION_END);
  if (server->daemon_ == nullptr) {
    close(*fd);
    std::string error = server->first_error();
    return absl::UnavailableError(absl::StrCat(
        "cannot serve ", server->tls_ ? "HTTPS" : "HTTP", " on ", address, ": ",
        error.empty() ? "libmicrohttpd did not start" : error));
  }
  return server;
}

HttpServer::HttpServer(Registry* registry, Metrics* metrics,
                       const Authorizer* auth)
    : registry_(registry), metrics_(metrics), auth_(auth) {}

void HttpServer::KeepFirstError(const std::string& message) {
  absl::MutexLock lock(&log_mu_);
  if (first_error_.empty()) first_error_ = message;
}

std::string HttpServer::first_error() {
  absl::MutexLock lock(&log_mu_);
  return first_error_;
}

HttpServer::~HttpServer() {
  // Closes the listening socket and every connection, after the requests
  // being answered.
  if (daemon_ != nullptr) MHD_stop_daemon(daemon_);
}

}  // namespace perceptron::server
