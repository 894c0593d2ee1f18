# Writes OUT, a C++ source defining perceptron::server::LivePage() as the bytes
# of IN. Run by the build: cmake -DIN=... -DOUT=... -P embed.cmake
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${hex}")
file(WRITE "${OUT}" "// Generated from ${IN} by embed.cmake; do not edit.\n"
  "#include \"server/http/web_page.h\"\n\n"
  "namespace perceptron::server {\nnamespace {\nconstexpr char kPage[] = {${bytes}};\n}\n"
  "absl::string_view LivePage() { return {kPage, sizeof(kPage)}; }\n"
  "}  // namespace perceptron::server\n")
