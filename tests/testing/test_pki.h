// A throwaway certificate authority for tests of TLS and mutual TLS, made
// with the openssl command line at test time (no keys in the repository).
//
//   absl::StatusOr<TestPki> pki = MakeTestPki(dir.path(), {"gpu-000"});
//   collector --tls_cert=pki->server_cert --tls_key=pki->server_key
//             --tls_client_ca=pki->ca_cert
//   agent     --tls_ca=pki->ca_cert --tls_cert=pki->clients["gpu-000"].cert
//             --tls_key=pki->clients["gpu-000"].key
#ifndef FABRICDIAG_TESTS_TESTING_TEST_PKI_H_
#define FABRICDIAG_TESTS_TESTING_TEST_PKI_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace fabricdiag::testing {

struct CertAndKey {
  std::string cert;  // PEM file paths
  std::string key;   // mode 0600
};

struct TestPki {
  std::string ca_cert;
  // For 127.0.0.1 and localhost (IP and DNS subject alternative names).
  CertAndKey server;
  // One client certificate per name, with the name as CN and DNS SAN.
  std::map<std::string, CertAndKey> clients;
};

// Writes the CA, the server and the client certificates under `dir`.
// Unavailable when the openssl command is missing.
absl::StatusOr<TestPki> MakeTestPki(const std::string& dir,
                                    const std::vector<std::string>& clients);

}  // namespace fabricdiag::testing

#endif  // FABRICDIAG_TESTS_TESTING_TEST_PKI_H_
