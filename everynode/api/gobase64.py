"""Whether Go's ``encoding/json`` accepts a JSON string as a ``[]byte`` value, and its error if not.

Why: ``[]byte`` fields (Secret ``data``, ConfigMap ``binaryData``, a CSR's ``request``) are
base64 in JSON, and kube-apiserver decodes them into bytes before anything else looks at the
object, so a value that is not base64 never reaches validation: the decoder's error comes back
as a 400 (``Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input
byte 3`` for the ``PUT_YOUR_BASE64_ENCODED_API_KEY_HERE`` placeholder of real manifests).
We store the JSON string, so the check is explicit.

The rule is ``base64.StdEncoding.Decode`` (Go's ``encoding/base64``, not strict): the standard
alphabet with ``=`` padding to a multiple of four, ``\\r`` and ``\\n`` skipped anywhere, and a
``CorruptInputError`` whose offset (in bytes of the UTF-8 text) is the first byte Go's decoder
refuses — the position of a foreign byte, of misplaced padding, the start of an incomplete
final quantum, or the byte after the padding when something follows it.  The common valid case
is answered by ``binascii`` in C; only a value it refuses is walked here to find Go's verdict.
"""

from __future__ import annotations

import binascii

_ALPHABET = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
_NEWLINES = (0x0A, 0x0D)
_PAD = 0x3D


def base64_error(text: str) -> str | None:
    """Go's error for ``text`` decoded as a ``[]byte`` JSON value, or None when it decodes."""
    try:
        binascii.a2b_base64(text, strict_mode=True)
        return None
    except (binascii.Error, ValueError):
        pass
    offset = _corrupt_offset(text.encode("utf-8", "surrogatepass"))
    return None if offset is None else f"illegal base64 data at input byte {offset}"


def _corrupt_offset(src: bytes) -> int | None:
    """``CorruptInputError``'s offset from ``StdEncoding.Decode``, quantum by quantum."""
    si, n = 0, len(src)
    while si < n:
        j = 0
        while j < 4:
            if si == n:
                if j == 0:
                    return None
                return si - j  # an incomplete final quantum (padding is required)
            c = src[si]
            si += 1
            if c in _ALPHABET:
                j += 1
                continue
            if c in _NEWLINES:
                continue
            if c != _PAD or j < 2:
                return si - 1
            if j == 2:  # "==" expected; the first "=" is consumed
                while si < n and src[si] in _NEWLINES:
                    si += 1
                if si == n:
                    return n
                if src[si] != _PAD:
                    return si - 1
                si += 1
            while si < n and src[si] in _NEWLINES:
                si += 1
            return si if si < n else None  # trailing garbage after the padding
    return None
