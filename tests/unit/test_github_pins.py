"""gate.github.pins: mode comment's constraints file, read as pip splits it, pins only, and copied.

Every character ``str.splitlines()`` breaks at (pip's own line splitting) is refused, as is anything
but a ``name==version`` pin, a comment or a blank line; pip is handed a copy holding the pins alone."""

from __future__ import annotations

import pytest

from gate.github.pins import PinsError, pinned_copy, read_pins

# Every character str.splitlines() breaks at, besides \n, \r and \r\n.
BREAKS = ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


def test_every_line_break_pip_splits_at_is_refused_with_its_line():
    for ch in BREAKS:
        assert len(f"a{ch}b".splitlines()) == 2  # what pip does with it
        with pytest.raises(PinsError, match=rf"^constraints file `c.txt`, line 2: character U\+{ord(ch):04X} "):
            read_pins(f"torch==2.5.1\nnumpy==1.0{ch}-r more.txt\n", "c.txt")


@pytest.mark.parametrize("line", [
    "numpy>=1.0", "numpy", "numpy==1.*", "numpy===1.0", "-r more.txt", "--index-url https://attacker.example/simple",
    "  -i https://attacker.example/simple", "numpy==2.0 --extra-index-url https://attacker.example/simple",
    "numpy @ https://attacker.example/n.whl", "numpy==2.0 \\", "numpy==${VERSION}", "numpy==2.0; python_version>'3'",
    "numpy[extra]==2.0", "-c other.txt", "./local-package", "numpy==2.0#not-a-comment"])
def test_anything_but_a_pin_is_refused(line):
    with pytest.raises(PinsError, match=r"^constraints file `c.txt`, line 3: not a `name==version` pin"):
        read_pins(f"# pins\ntorch==2.5.1\n{line}\n", "c.txt")


def test_pins_comments_blank_lines_and_line_endings_are_read():
    text = "# core pins\r\nrich==13.9.4  # the console\r\n\n  torch == 2.5.1+cpu\rnumpy==2.0.0rc1\nA.b_c-d==1!2.0.post1.dev3\n"
    assert read_pins(text, "c.txt") == [("rich", "13.9.4"), ("torch", "2.5.1+cpu"), ("numpy", "2.0.0rc1"),
                                        ("A.b_c-d", "1!2.0.post1.dev3")]


def test_pip_gets_a_copy_with_the_pins_alone(tmp_path):
    source = tmp_path / "c.txt"
    source.write_text("# -*- coding: utf-7 -*-\nrich==13.9.4  # the console\n")  # pip follows a coding line
    dest = pinned_copy(str(source), str(tmp_path / "out" / "pins.txt"))
    assert open(dest).read() == "rich==13.9.4\n"


def test_text_past_ascii_is_refused_with_its_line(tmp_path):
    source = tmp_path / "c.txt"
    source.write_bytes(b"rich==13.9.4\n\xef\xbb\xbftorch==2.5.1\n")  # a byte order mark, which pip would follow
    with pytest.raises(PinsError, match=r"^constraints file `.*c.txt`, line 2: character U\+FEFF "):
        pinned_copy(str(source), str(tmp_path / "pins.txt"))
    source.write_bytes(b"rich==13.9.4\n\xfftorch==2.5.1\n")
    with pytest.raises(PinsError, match=r"^constraints file `.*c.txt`, line 2: not UTF-8 \(byte 0xFF\)$"):
        pinned_copy(str(source), str(tmp_path / "pins.txt"))
    assert not (tmp_path / "pins.txt").exists()
