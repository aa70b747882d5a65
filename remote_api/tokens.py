"""Access tokens: short-lived JWTs (pyjwt) that bind a device to its fingerprint.

Signed with the gateway's Ed25519 key; verification accepts EdDSA and nothing else (the
algorithm is pinned, never read from the token), so `alg: none`, HMAC tokens keyed with the
public key (algorithm confusion) and any other algorithm are refused. Claims: `iss`, `sub`
(device id), `fph` (hash of the device fingerprint), `jti` (for revocation), `iat`, `nbf`, `exp`.
Every failure is an `AuthError` with a code and a plain-language message.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

import jwt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from remote_api.envelope import AuthError

ALGORITHM = "EdDSA"
ISSUER = "stella-gateway"
REQUIRED_CLAIMS = ("sub", "fph", "jti", "iat", "exp")
DEFAULT_TTL = 7200.0
_RENEW = "The app gets a new token by itself; if this keeps happening, pair the device again."


@dataclass(frozen=True)
class AccessClaims:
    device_id: str
    fingerprint_hash: str
    jti: str
    issued: float
    expires: float


class TokenIssuer:
    """Issues and verifies access tokens with one signing key (shared by all replicas)."""

    def __init__(self, key: Ed25519PrivateKey, *, ttl: float = DEFAULT_TTL, leeway: float = 30.0,
                 clock: Callable[[], float] = time.time) -> None:
        self._key = key
        self._public = key.public_key()
        self.ttl = ttl
        self.leeway = leeway
        self._clock = clock

    def issue(self, device_id: str, fingerprint_hash: str) -> tuple[str, AccessClaims]:
        now = int(self._clock())
        claims = AccessClaims(device_id, fingerprint_hash, secrets.token_urlsafe(16), now, now + self.ttl)
        payload = {"iss": ISSUER, "sub": device_id, "fph": fingerprint_hash, "jti": claims.jti, "iat": now,
                   "nbf": now, "exp": int(claims.expires)}
        return jwt.encode(payload, self._key, algorithm=ALGORITHM), claims

    def verify(self, token: str) -> AccessClaims:
        try:
            claims = jwt.decode(token, self._public, algorithms=[ALGORITHM], issuer=ISSUER, leeway=self.leeway,
                                options={"require": list(REQUIRED_CLAIMS)})
        except jwt.ExpiredSignatureError:
            raise AuthError("token_expired", "the access token has expired", _RENEW) from None
        except jwt.ImmatureSignatureError:
            raise AuthError("token_not_yet_valid", "the access token is not valid yet (issued in the future)",
                            "Check that the clocks of this computer and of the server are right.") from None
        except jwt.InvalidAlgorithmError:
            raise AuthError("bad_algorithm", f"the access token is not signed with {ALGORITHM}, the only "
                            "algorithm this gateway accepts", _RENEW) from None
        except jwt.InvalidSignatureError:
            raise AuthError("bad_signature", "the access token's signature does not match this gateway's key",
                            "Pair the device with this server again.") from None
        except jwt.MissingRequiredClaimError as exc:
            raise AuthError("missing_claim", f"the access token lacks the '{exc.claim}' claim", _RENEW) from None
        except jwt.DecodeError:
            raise AuthError("malformed_token", "the access token is not a well-formed JWT", _RENEW) from None
        except jwt.InvalidTokenError as exc:
            raise AuthError("invalid_token", f"the access token was refused ({exc})", _RENEW) from None
        fields = [claims.get(name) for name in ("sub", "fph", "jti")]
        if not all(isinstance(v, str) and 0 < len(v) <= 128 for v in fields):
            raise AuthError("malformed_token", "the access token's sub, fph and jti must be short strings", _RENEW)
        return AccessClaims(fields[0], fields[1], fields[2], float(claims["iat"]), float(claims["exp"]))
