#!/usr/bin/env bash
# Test certificates in DIR (default: the current folder): a CA (ca.pem, ca.key); a server
# certificate for 127.0.0.1 and localhost signed by it (server.pem, server.key); a client
# certificate signed by it (client.pem, client.key); and a second, self-signed certificate
# (other.pem, other.key) that a server must refuse from a client. Valid for two days.
# Used by tests/e2e/security_test.cc and tests/e2e/https_test.py.
set -euo pipefail
cd "${1:-.}"
k="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
openssl req -x509 $k -keyout ca.key -out ca.pem -days 2 -subj /CN=test-ca
openssl req $k -keyout server.key -out server.csr -subj /CN=localhost
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost' > san.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
  -extfile san.ext -out server.pem
openssl req $k -keyout client.key -out client.csr -subj /CN=client
openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -out client.pem
openssl req -x509 $k -keyout other.key -out other.pem -days 2 -subj /CN=other
