"""TLS for the link's clients: certificates are always verified, against the system's CAs or a
given CA file (a private CA, or a self-signed server certificate)."""

from __future__ import annotations

import functools
import ssl
from pathlib import Path


def client_context(ca_file: str | Path | None = None) -> ssl.SSLContext:
    """A verifying client context; ValueError naming the file if the CA file is unusable."""
    return _context(str(ca_file) if ca_file else None)


@functools.lru_cache(maxsize=8)
def _context(ca_file: str | None) -> ssl.SSLContext:
    """Loading a CA store costs milliseconds: clients with the same CA share one context."""
    try:
        return ssl.create_default_context(cafile=ca_file)
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(f"cannot use {ca_file} as a CA file ({exc}); give a PEM file with the CA certificate"
                         ) from None


def untrusted(exc: BaseException | None) -> ssl.SSLCertVerificationError | None:
    """The certificate verification failure behind `exc` (a library error wrapping it), if any."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, ssl.SSLCertVerificationError):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def explain_untrusted(url: str, exc: ssl.SSLCertVerificationError) -> str:
    return (f"the TLS certificate of {url} is not trusted ({exc.verify_message or exc}); if the server uses a "
            "private CA or a self-signed certificate, pass that CA's certificate file (--ca-file)")
