"""One HTTP/1.1 request written byte for byte over TLS, for attacks a polite client refuses to
send (garbled headers, NUL bytes, wrong tokens) and for reading the answer exactly as sent."""

from __future__ import annotations

import asyncio
import ssl


async def raw_request(port: int, context: ssl.SSLContext, method: str, path: str, *, body: bytes = b"",
                      authorization: bytes | None, headers: dict[str, str] | None = None) -> tuple[int, bytes, bytes]:
    """(status code, head, body) of one request to 127.0.0.1:port; ``authorization=None`` sends no
    Authorization header."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context, server_hostname="127.0.0.1")
    lines = [f"{method} {path} HTTP/1.1".encode(), b"Host: 127.0.0.1", f"Content-Length: {len(body)}".encode(),
             b"Connection: close"]
    if authorization is not None:
        lines.append(b"Authorization: " + authorization)
    lines += [f"{k}: {v}".encode() for k, v in (headers or {}).items()]
    writer.write(b"\r\n".join(lines) + b"\r\n\r\n" + body)
    data = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    head, _, payload = data.partition(b"\r\n\r\n")
    code = int(head.split()[1])
    if b"transfer-encoding: chunked" in head.lower():
        payload = b"".join(payload.split(b"\r\n")[1::2])
    return code, head, payload
