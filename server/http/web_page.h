// The live page (server/http/web/index.html), built into the binary.
#ifndef PERCEPTRON_SERVER_HTTP_WEB_PAGE_H_
#define PERCEPTRON_SERVER_HTTP_WEB_PAGE_H_

#include "absl/strings/string_view.h"

namespace perceptron::server {

absl::string_view LivePage();

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_HTTP_WEB_PAGE_H_
