"""The HTTP port speaks HTTPS when the server has a certificate: a real HTTPS client (Python's
ssl) verifies the server against the CA, reads /healthz, /metrics and JSON with a token, and
presents a client certificate when the server asks for one (--tls_client_ca); a plain-HTTP
request to the port gets no answer, so a token is never taken in clear text.
Run by ctest (python3 -m pytest), with its settings in the environment (tests/e2e/conftest.py)."""
import http.client
import os
import socket
import ssl
import subprocess
import tempfile
import unittest
import urllib.error

import perceptrond_process as pp

PERCEPTROND = pp.setting("PERCEPTROND")

MAKE_CERTIFICATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support",
                                 "make_certificates.sh")


class HttpsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.certs = tempfile.TemporaryDirectory(prefix="certs-")
        subprocess.run(["bash", MAKE_CERTIFICATES, cls.certs.name], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cls.tokens = os.path.join(cls.certs.name, "tokens")
        with open(cls.tokens, "w") as f:
            f.write("reader-token-0123456789 read\n")

    @classmethod
    def tearDownClass(cls):
        cls.certs.cleanup()

    def path(self, name):
        return os.path.join(self.certs.name, name)

    def context(self, client=None):
        c = ssl.create_default_context(cafile=self.path("ca.pem"))
        if client:
            c.load_cert_chain(self.path(client + ".pem"), self.path(client + ".key"))
        return c

    def plain_http_answer(self, port):
        """What a plain-HTTP request with a token gets from the port: the bytes it answers."""
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n"
                      b"Authorization: Bearer reader-token-0123456789\r\n\r\n")
            data = b""
            try:
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            except (ConnectionResetError, socket.timeout):
                pass
            return data

    def test_https_with_the_grpc_certificate(self):
        server = pp.Perceptrond(PERCEPTROND, "--durability=none",
                                "--tls_cert=" + self.path("server.pem"),
                                "--tls_key=" + self.path("server.key"),
                                "--tokens_file=" + self.tokens)
        try:
            self.assertTrue(server.http.startswith("https://"), server.http)
            ctx = self.context()
            self.assertEqual(server.get("/healthz", context=ctx)[0], 200)
            status, ctype, body = server.get("/metrics", "reader-token-0123456789", context=ctx)
            self.assertEqual(status, 200)
            self.assertIn("perceptron_models", body)
            self.assertEqual(server.get("/metrics", context=ctx)[0], 401)
            self.assertEqual(server.get("/api/v1/models", "reader-token-0123456789", context=ctx),
                             (200, "application/json", '{"models":[]}\n'))
            # The name checked is the certificate's: a client trusting another CA refuses.
            other = ssl.create_default_context(cafile=self.path("other.pem"))
            with self.assertRaises(urllib.error.URLError) as refused:
                server.get("/healthz", context=other)
            self.assertIsInstance(refused.exception.reason, ssl.SSLCertVerificationError)
            # No plain HTTP on the port: a request in clear text gets no HTTP answer.
            self.assertFalse(self.plain_http_answer(server.http_port).startswith(b"HTTP/"))
        finally:
            self.assertEqual(server.stop(), 0)

    def test_a_client_ca_makes_https_ask_for_a_client_certificate(self):
        server = pp.Perceptrond(PERCEPTROND, "--durability=none",
                                "--tls_cert=" + self.path("server.pem"),
                                "--tls_key=" + self.path("server.key"),
                                "--tls_client_ca=" + self.path("ca.pem"))
        try:
            self.assertTrue(server.http.startswith("https://"), server.http)
            status, _, body = server.get("/healthz", context=self.context("client"))
            self.assertEqual((status, body), (200, "SERVING\n"))
            for client in (None, "other"):
                conn = http.client.HTTPSConnection("127.0.0.1", server.http_port, timeout=30,
                                                   context=self.context(client))
                with self.assertRaises((ssl.SSLError, ConnectionError,
                                        http.client.RemoteDisconnected), msg=client):
                    conn.request("GET", "/healthz")
                    conn.getresponse().read()
                conn.close()
        finally:
            self.assertEqual(server.stop(), 0)

