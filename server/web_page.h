// The live page (server/web/index.html), built into the binary.
#ifndef PERCEPTRON_SERVER_WEB_PAGE_H_
#define PERCEPTRON_SERVER_WEB_PAGE_H_

#include "absl/strings/string_view.h"

namespace perceptron::server {

absl::string_view LivePage();

}  // namespace perceptron::server

#endif  // PERCEPTRON_SERVER_WEB_PAGE_H_
