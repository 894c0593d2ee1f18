#include "server/http.h"

#include <CivetServer.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "google/protobuf/util/json_util.h"
#include "server/model_ops.h"
#include "server/web_page.h"

namespace perceptron::server {
namespace {

struct Reply {
  int code = 200;
  std::string content_type = "application/json";
  std::string body;
};

Reply Error(int code, absl::string_view message) {
  Reply r;
  r.code = code;
  r.body = absl::StrCat("{\"error\":\"", message, "\"}\n");
  return r;
}

Reply FromStatus(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kNotFound:
      return Error(404, "not found");
    case absl::StatusCode::kUnauthenticated:
      return Error(401, "a bearer token is needed");
    case absl::StatusCode::kPermissionDenied:
      return Error(403, "the token does not cover this");
    case absl::StatusCode::kInvalidArgument:
      return Error(400, "bad request");
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

void Send(mg_connection* conn, const Reply& r) {
  const char* reason = mg_get_response_code_text(conn, r.code);
  std::string head = absl::StrCat(
      "HTTP/1.1 ", r.code, " ", reason, "\r\nContent-Type: ", r.content_type,
      "\r\nContent-Length: ", r.body.size(),
      "\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n");
  if (r.code == 401) absl::StrAppend(&head, "WWW-Authenticate: Bearer\r\n");
  absl::StrAppend(&head, "\r\n");
  mg_write(conn, head.data(), head.size());
  const mg_request_info* info = mg_get_request_info(conn);
  if (std::string_view(info->request_method) != "HEAD") {
    mg_write(conn, r.body.data(), r.body.size());
  }
}

// One handler for every path: routes, checks the token, counts, answers.
class Handler final : public CivetHandler {
 public:
  explicit Handler(HttpServer* server) : server_(server) {}

  bool handleGet(CivetServer*, mg_connection* conn) override {
    const mg_request_info* info = mg_get_request_info(conn);
    // The decoded path as sent: civetweb's cleaned local_uri drops trailing
    // dots ("/api/v1/models/a." would name model "a"). No file is served, so
    // no path is ever resolved against a directory.
    const char* raw =
        info->local_uri_raw ? info->local_uri_raw : info->local_uri;
    const std::string path = raw ? raw : "/";
    const char* header = mg_get_header(conn, "Authorization");
    const std::string authorization = header ? header : "";
    std::string handler;
    Reply reply = Route(path, authorization, &handler);
    server_->metrics()->CountHttp(handler, reply.code);
    Send(conn, reply);
    return true;
  }
  bool handleHead(CivetServer* s, mg_connection* conn) override {
    return handleGet(s, conn);
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
      } else {
        r.code = 503;
        r.body = "NOT_SERVING\n";
      }
      return r;
    }
    if (path == "/" || path == "/index.html") {
      // The page is static; its data requests carry the token.
      *handler = "/";
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
      *handler =
          history ? "/api/v1/models/{id}/history" : "/api/v1/models/{id}";
      const std::string id(rest);
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
    return Error(404, "not found");
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

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    const std::string& host, int port, Registry* registry, Metrics* metrics,
    const Authorizer* auth) {
  static const int initialized = mg_init_library(0);
  (void)initialized;
  std::unique_ptr<HttpServer> server(new HttpServer(registry, metrics, auth));
  const std::string address =
      absl::StrContains(host, ':') && !absl::StartsWith(host, "[")
          ? absl::StrCat("[", host, "]:", port)
          : absl::StrCat(host, ":", port);
  std::vector<std::string> options = {
      "listening_ports",       address, "num_threads",       "4",
      "request_timeout_ms",    "10000", "enable_keep_alive", "yes",
      "keep_alive_timeout_ms", "30000"};
  // civetweb reports why it cannot start (a port in use, say) only to its log
  // callback, on the starting thread; its exception then says "null context".
  static thread_local std::string first_error;
  first_error.clear();
  CivetCallbacks callbacks;
  callbacks.log_message = [](const mg_connection*, const char* message) {
    if (first_error.empty()) first_error = message;
    return 1;
  };
  try {
    server->server_ = std::make_unique<CivetServer>(options, &callbacks);
  } catch (const CivetException& e) {
    return absl::UnavailableError(absl::StrCat(
        "cannot serve HTTP on ", address, ": ",
        first_error.empty() ? std::string(e.what()) : first_error));
  }
  const std::vector<int> ports = server->server_->getListeningPorts();
  if (ports.empty()) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve HTTP on ", address));
  }
  server->port_ = ports[0];
  server->handlers_.push_back(std::make_unique<Handler>(server.get()));
  server->server_->addHandler("/", server->handlers_.back().get());
  return server;
}

HttpServer::HttpServer(Registry* registry, Metrics* metrics,
                       const Authorizer* auth)
    : registry_(registry), metrics_(metrics), auth_(auth) {}

HttpServer::~HttpServer() {
  if (server_ != nullptr) server_->close();
}

}  // namespace perceptron::server
