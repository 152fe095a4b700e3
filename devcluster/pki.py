"""Keys and certificates for the local control plane, made with the ``openssl`` command.

- a service-account key pair for kube-apiserver (it signs and verifies service-account tokens);
- a throwaway CA and a serving certificate for 127.0.0.1, for admission webhooks that the API server calls over
  HTTPS on loopback (Volcano's webhook manager, and this project's own webhooks in tests);
- a client CA (``--client-ca-file``), so that a kubeconfig with a client certificate, as kubeadm's ``admin.conf``
  has, can be tested against the real API server (:func:`client_certificate`).

The API server's own serving certificate is self-signed by kube-apiserver into --cert-dir; the kubeconfig names it as
the certificate authority.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path


class PkiError(RuntimeError):
    pass


def _openssl(*args: str, cwd: Path) -> None:
    if shutil.which("openssl") is None:
        raise PkiError("the `openssl` command is not on PATH; install it (Debian: apt-get install openssl).")
    proc = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise PkiError(f"openssl {args[0]} failed: {proc.stderr.strip()}")


def service_account_keys(directory: Path) -> tuple[Path, Path]:
    """(private key, public key) for --service-account-signing-key-file / --service-account-key-file."""
    directory.mkdir(parents=True, exist_ok=True)
    key, pub = directory / "sa.key", directory / "sa.pub"
    if not key.exists():
        _openssl("genrsa", "-out", key.name, "2048", cwd=directory)
        _openssl("rsa", "-in", key.name, "-pubout", "-out", pub.name, cwd=directory)
    return key, pub


@dataclass(frozen=True)
class ServingCert:
    ca: Path
    cert: Path
    key: Path

    @property
    def ca_bundle(self) -> bytes:
        return self.ca.read_bytes()


def loopback_serving_cert(directory: Path, name: str) -> ServingCert:
    """A CA and a certificate for IP 127.0.0.1 and DNS localhost, valid for a year."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, ca = directory / f"{name}-ca.key", directory / f"{name}-ca.crt"
    key, csr, cert = directory / f"{name}.key", directory / f"{name}.csr", directory / f"{name}.crt"
    if cert.exists() and key.exists() and ca.exists():
        return ServingCert(ca, cert, key)
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key.name, "-out", ca.name,
             "-days", "365", "-subj", f"/CN={name}-ca", cwd=directory)
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key.name, "-out", csr.name,
             "-subj", f"/CN={name}", cwd=directory)
    extensions = directory / f"{name}.ext"
    extensions.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    _openssl("x509", "-req", "-in", csr.name, "-CA", ca.name, "-CAkey", ca_key.name, "-CAcreateserial",
             "-out", cert.name, "-days", "365", "-extfile", extensions.name, cwd=directory)
    return ServingCert(ca, cert, key)


CLIENT_CA = "client-ca"


def client_ca(directory: Path) -> Path:
    """The CA kube-apiserver trusts for client certificates (made once; its key stays beside it)."""
    directory.mkdir(parents=True, exist_ok=True)
    ca = directory / f"{CLIENT_CA}.crt"
    if not ca.exists():
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{CLIENT_CA}.key", "-out", ca.name,
                 "-days", "365", "-subj", f"/CN={CLIENT_CA}", cwd=directory)
    return ca


def client_certificate(directory: Path, pki_directory: Path, *, user: str, group: str) -> tuple[Path, Path]:
    """(certificate, key) for ``user`` in ``group`` (the subject's CN and O, as Kubernetes reads them), signed by
    the client CA in ``pki_directory``; written to ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    key, csr, cert = directory / f"{user}.key", directory / f"{user}.csr", directory / f"{user}.crt"
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr),
             "-subj", f"/O={group}/CN={user}", cwd=directory)
    _openssl("x509", "-req", "-in", str(csr), "-CA", str(pki_directory / f"{CLIENT_CA}.crt"),
             "-CAkey", str(pki_directory / f"{CLIENT_CA}.key"), "-CAcreateserial", "-out", str(cert), "-days", "1",
             cwd=directory)
    return cert, key
