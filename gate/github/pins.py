"""The constraints file of mode ``comment``, read as pip would read it and handed on as pins only.

pip obeys options inside a constraints file (``--index-url``, ``-r``, ...), URLs, ``${VAR}`` and line
continuations, and splits lines with ``str.splitlines()`` (also at ``\\x0b \\x1c \\x85 \\u2028`` ...):
so every line, split as pip splits it, must be a printable-ASCII ``name==version`` pin, comment or
blank, and pip gets a new file of the pins alone (no comment, so no ``coding:`` line for it to follow).
Standard library only: the action runs this before parity-gate is installed.
"""

from __future__ import annotations

import re
from pathlib import Path

# pip's own comment rule (req_file.COMMENT_RE): a '#' at the start or after whitespace.
COMMENT = re.compile(r"(^|\s+)#.*$")
NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
# A PEP 440 version, with an optional local part (torch==2.5.1+cpu).
VERSION = (r"(?:[0-9]+!)?[0-9]+(?:\.[0-9]+)*(?:[-_.]?(?:a|b|c|rc|alpha|beta|pre|preview)[-_.]?[0-9]*)?"
           r"(?:-[0-9]+|[-_.]?(?:post|rev|r)[-_.]?[0-9]*)?(?:[-_.]?dev[-_.]?[0-9]*)?"
           r"(?:\+[a-z0-9]+(?:[-_.][a-z0-9]+)*)?")
PIN = re.compile(rf"({NAME})\s*==\s*({VERSION})", re.IGNORECASE)
PRINTABLE = re.compile(r"[^\x20-\x7e\r\n]")  # \r and \n end lines; anything else outside printable ASCII is refused
MAX_BYTES = 1 << 20


class PinsError(ValueError):
    """The file holds something other than pins: the message names the file and the line."""


def read_pins(text: str, where: str) -> list[tuple[str, str]]:
    """(name, version) of every pin of ``text``, split into lines as pip splits them."""
    bad = PRINTABLE.search(text)
    if bad:
        line = len((text[: bad.start()] + "x").splitlines())  # pip's numbering: its own line splitting
        raise PinsError(f"constraints file `{where}`, line {line}: character U+{ord(bad[0]):04X} (only printable "
                        "ASCII; pip reads some control characters as line breaks)")
    pins = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = COMMENT.sub("", line).strip()
        if not line:
            continue
        found = PIN.fullmatch(line)
        if found is None:
            raise PinsError(f"constraints file `{where}`, line {number}: not a `name==version` pin (in mode comment "
                            "only pins, comments and blank lines: no pip options, URLs, markers or ranges)")
        pins.append((found[1], found[2]))
    return pins


def pinned_copy(source: str, dest: str) -> str:
    """Write the pins of the constraints file ``source`` to ``dest`` (one ``name==version`` a line), the
    file pip is given instead of ``source``; returns ``dest``. PinsError when ``source`` holds anything else."""
    path = Path(source)
    try:
        if path.stat().st_size > MAX_BYTES:
            raise PinsError(f"constraints file `{source}`: over {MAX_BYTES:,} bytes")
        text = path.read_bytes().decode("utf-8")  # anything past ASCII is then refused by its character
    except UnicodeDecodeError as e:
        line = len((e.object[: e.start].decode("utf-8", "replace") + "x").splitlines())
        raise PinsError(f"constraints file `{source}`, line {line}: not UTF-8 "
                        f"(byte 0x{e.object[e.start]:02X})") from None
    except OSError as e:
        raise PinsError(f"constraints file `{source}`: cannot be read ({e.strerror})") from None
    pins = read_pins(text, source)
    out = Path(dest)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(f"{name}=={version}\n" for name, version in pins), encoding="ascii")
    return str(out)
