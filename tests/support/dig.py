"""``dig`` for the tests that query everynode's cluster DNS the way the README does.

The machine's ``dig`` (Debian's dnsutils) when it is installed; otherwise a stand-in of the same
name that sends the same query over UDP with dnspython (a dependency of everynode), so that no
test needs a system package and none skips.  Only ``dig @SERVER -p PORT NAME [TYPE] +short`` is
supported: the form the README and the tests use.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

STANDIN = '''#!{python}
"""Stand-in for dig (not installed here): dig @SERVER -p PORT NAME [TYPE] +short, via dnspython."""
import sys
import dns.message, dns.query, dns.rdatatype
server, port, name, rtype = "127.0.0.1", 53, None, "A"
args = sys.argv[1:]
while args:
    a = args.pop(0)
    if a.startswith("@"):
        server = a[1:]
    elif a == "-p":
        port = int(args.pop(0))
    elif a.startswith("+"):
        if a != "+short":
            sys.exit("dig stand-in: only +short is supported")
    elif name is None:
        name = a
    else:
        rtype = a.upper()
reply = dns.query.udp(dns.message.make_query(name, rtype), server, port=port, timeout=5)
for rrset in reply.answer:
    for rdata in rrset:
        print(rdata.to_text())
'''


def dig_executable(bin_dir: Path) -> str:
    """The machine's ``dig``, or the stand-in written as ``bin_dir/dig``; returns its path."""
    found = shutil.which("dig")
    if found is not None:
        return found
    bin_dir.mkdir(parents=True, exist_ok=True)
    standin = bin_dir / "dig"
    standin.write_text(STANDIN.format(python=sys.executable))
    standin.chmod(0o755)
    return str(standin)
