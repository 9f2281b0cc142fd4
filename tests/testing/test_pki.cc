#include "tests/testing/test_pki.h"

#include <sys/stat.h>

#include <fstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tests/testing/subprocess.h"

namespace fabricdiag::testing {
namespace {

absl::Status Openssl(std::vector<std::string> args) {
  const std::string command = args[0];
  args.insert(args.begin(), {"/usr/bin/env", "openssl"});
  RunResult r = RunCommand(args, absl::Seconds(60));
  if (r.exit_code == 127) {
    return absl::UnavailableError("the openssl command is not installed");
  }
  if (r.exit_code != 0) {
    return absl::InternalError(
        absl::StrCat("openssl ", command, " failed: ", r.err));
  }
  return absl::OkStatus();
}

// A P-256 key and a certificate for `subject` with `san`, signed by the CA.
absl::StatusOr<CertAndKey> Issue(
    const std::string& dir, const std::string& stem, const std::string& subject,
    const std::string& san, const std::string& usage,
    const std::string& ca_cert, const std::string& ca_key) {
  CertAndKey out{dir + "/" + stem + ".pem", dir + "/" + stem + "-key.pem"};
  const std::string csr = dir + "/" + stem + ".csr";
  const std::string ext = dir + "/" + stem + ".ext";
  std::ofstream(ext) << "subjectAltName=" << san << "\n"
                     << "extendedKeyUsage=" << usage << "\n"
                     << "basicConstraints=CA:FALSE\n";
  absl::Status s = Openssl({"req", "-new", "-newkey", "ec", "-pkeyopt",
                            "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
                            out.key, "-subj", subject, "-out", csr});
  if (!s.ok()) return s;
  s = Openssl({"x509", "-req", "-in", csr, "-CA", ca_cert, "-CAkey", ca_key,
               "-CAcreateserial", "-days", "2", "-extfile", ext, "-out",
               out.cert});
  if (!s.ok()) return s;
  chmod(out.key.c_str(), 0600);
  return out;
}

}  // namespace

absl::StatusOr<TestPki> MakeTestPki(const std::string& dir,
                                    const std::vector<std::string>& clients) {
  TestPki pki;
  pki.ca_cert = dir + "/ca.pem";
  const std::string ca_key = dir + "/ca-key.pem";
  absl::Status s = Openssl({"req", "-x509", "-newkey", "ec", "-pkeyopt",
                            "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
                            ca_key, "-subj", "/CN=fabricdiag test CA", "-days",
                            "2", "-out", pki.ca_cert});
  if (!s.ok()) return s;
  chmod(ca_key.c_str(), 0600);
  absl::StatusOr<CertAndKey> server =
      Issue(dir, "server", "/CN=localhost", "DNS:localhost,IP:127.0.0.1",
            "serverAuth", pki.ca_cert, ca_key);
  if (!server.ok()) return server.status();
  pki.server = *server;
  for (const std::string& name : clients) {
    absl::StatusOr<CertAndKey> client =
        Issue(dir, "client-" + name, "/CN=" + name, "DNS:" + name, "clientAuth",
              pki.ca_cert, ca_key);
    if (!client.ok()) return client.status();
    pki.clients[name] = *client;
  }
  return pki;
}

}  // namespace fabricdiag::testing
