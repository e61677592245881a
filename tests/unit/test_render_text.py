"""gate.render.text: untrusted text reads the same and does nothing (no mention, link, reference or HTML)."""

from __future__ import annotations

import pytest

from gate.core.spans import span
from gate.render.text import NAME_CAP, ZWSP, attr, code, inert, plain, row, shorten, visible
from tests.support.github_text import acted_on


@pytest.mark.parametrize(("text", "shown"), [
    ("@victim", f"@{ZWSP}victim"),
    ("ping @octo/admins now", f"ping @{ZWSP}octo/admins now"),
    ("a@evil.example", f"a@{ZWSP}evil.example"),
    ("fixes #12 and octo/other#3, GH-4", f"fixes #{ZWSP}12 and octo/other#{ZWSP}3, GH-{ZWSP}4"),
    ("see https://evil.example/x", f"see https:{ZWSP}//evil.example/x"),
    ("WWW.evil.example", f"WWW{ZWSP}.evil.example"),
    ("mailto:a and xmpp:b", f"mailto{ZWSP}:a and xmpp{ZWSP}:b"),
    ("ratio 3:1, C#, a#b, ws://", f"ratio 3:1, C#, a#b, ws:{ZWSP}//"),
])
def test_inert_breaks_what_github_acts_on_and_nothing_else(text, shown):
    assert inert(text) == shown
    assert inert(text).replace(ZWSP, "") == text  # reads the same


@pytest.mark.parametrize("render", [plain, attr])
def test_prose_and_html_text_do_nothing_on_github(render):
    text = "@victim www.evil.example #1 <img src=x> [x](https://evil.example) <a href=https://evil.example>"
    acted = acted_on(f"<summary>{render(text)}</summary>" if render is attr else render(text))
    assert acted.active == [] and acted.hrefs == [] and acted.images == [] and acted.tags <= {"p", "summary"}


def test_what_a_message_quotes_in_backticks_is_a_code_span_never_escaped_backticks():
    text = "no baseline: create it with `parity-gate update-baseline --model a` (@victim, a | b) then ` alone"
    shown = plain(text)
    assert shown == ("no baseline: create it with `parity-gate update-baseline --model a` (@\u200bvictim, a \\| b) "
                     "then \\` alone")
    acted = acted_on(shown)
    assert acted.active == [] and acted.tags == {"p", "code"}
    assert "\\`" not in plain("see `x` and `y`")


def test_a_code_span_keeps_its_text_and_does_nothing():
    text = "@victim https://evil.example #1 <b>"
    assert code(text) == f"`{text}`"
    acted = acted_on(code(text))
    assert acted.active == [] and acted.tags == {"p", "code"}


@pytest.mark.parametrize("render", [plain, attr, code])
def test_characters_that_cannot_be_seen_are_dropped_and_line_breaks_become_spaces(render):
    hidden = "\u202e\u2066\u2069\u200b\u200d\u2060\ufeff\U000e0041\u00ad\u3164\ufe0f\x00\x1b"
    assert render(f"tiny{hidden}-cnn") == render("tiny-cnn")
    assert render("a\u2028b\x1cc\x85d") == render("a b c d")
    assert visible("≈ 1,500× 😀 é") == "≈ 1,500× 😀 é"


def test_a_message_clipped_inside_a_code_span_ends_before_it():
    text = "baseline `b/m.msgpack.zst`: truncated; re-record it with `parity-gate update-baseline --model m`"
    shown = plain(text, 70)
    assert shown.endswith("truncated; re-record it with…") and "\\`" not in shown


def test_a_failed_check_that_measures_nothing_says_changed_never_a_dash_over_a_dash():
    from gate.render.text import over

    assert over("shape", None, None) == "changed"
    assert over("reference-drift", 2e-6, 1e-9) == "2.00e-06 > 1.00e-09"  # twin: a measured check


def test_nan_inf_counts_that_differ_read_as_the_count_and_the_one_expected_never_as_a_limit():
    """Fewer -Inf than the baseline is no "20 > 30": the rule is that the counts differ."""
    from gate.render.text import over

    assert over("nonfinite", 20.0, 30.0) == "20 NaN/Inf, expected 30"
    assert over("nonfinite", 3.0, 0.0, aside=" (≈ 9×)") == "3 NaN/Inf, expected 0"


def _html(markdown: str) -> str:
    from markdown_it import MarkdownIt  # CommonMark with GitHub's tables, as the comment is read
    return MarkdownIt("commonmark").enable("table").render(markdown).strip()


@pytest.mark.parametrize("name", ["d.a`b``c", "`edge`", "a|b|c"])
def test_a_name_quoted_in_a_message_reads_whole_and_the_prose_after_it_stays_prose(name):
    shown = _html(plain(f"moved first at {span(name)} (drift): tensor {span(name + '.w')}"))
    assert shown == f"<p>moved first at <code>{name}</code> (drift): tensor <code>{name}.w</code></p>"


def test_a_plain_name_is_one_backtick_span_as_before():
    assert span("layer1.conv") == code("layer1.conv") == "`layer1.conv`"
    assert plain("run `parity-gate check` now") == "run `parity-gate check` now"


def test_a_pipe_is_escaped_in_a_table_cell_only():
    assert code("a|b") == "`a|b`"
    table = "| h | i |\n| --- | --- |\n" + row(code("a|b"), plain("x|y"))
    assert "<td><code>a|b</code></td>\n<td>x|y</td>" in _html(table)


def test_a_long_name_is_cut_in_the_middle_so_its_leaf_shows():
    prefix = "encoder_stage_with_a_descriptive_but_long_configuration_key_" * 3
    q, k = shorten(f"blocks.{prefix}.q_proj"), shorten(f"blocks.{prefix}.k_proj")
    assert q != k and len(q) == NAME_CAP and "…" in q
    assert q.startswith("blocks.encoder") and q.endswith(".q_proj")


def test_a_name_at_the_cap_is_not_cut():
    assert shorten("x" * NAME_CAP) == "x" * NAME_CAP
    assert shorten("x" * (NAME_CAP + 1)) == "x" * 79 + "…" + "x" * 80
