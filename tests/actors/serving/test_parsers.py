"""Tool-call parser names are checked against the installed vLLM's own table, without importing vLLM."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.serving.parsers import known_tool_parsers, parser_names, tool_parser_problem

KNOWN = frozenset({"hermes", "lfm2", "mistral"})


def test_names_come_from_the_registration_table_and_register_calls(tmp_path: Path):
    (tmp_path / "__init__.py").write_text(
        '_TOOL_PARSERS_TO_REGISTER = {"hermes": ("hermes_tool_parser", "Hermes2ProToolParser")}\n'
    )
    (tmp_path / "old.py").write_text(
        '@ToolParserManager.register_module(["mistral", "mistral_v2"])\nclass A: ...\n'
        '@ToolParserManager.register_module(name="lfm2")\nclass B: ...\n'
    )
    (tmp_path / "broken.py").write_text("def (\n")  # unreadable files are passed over
    assert parser_names(tmp_path) == {"hermes", "mistral", "mistral_v2", "lfm2"}
    assert parser_names(tmp_path / "absent") == set()


def test_an_unknown_parser_names_the_closest_or_every_known_one():
    assert tool_parser_problem("hermes", known=KNOWN) is None
    assert "did you mean hermes?" in tool_parser_problem("hermse", known=KNOWN)
    assert tool_parser_problem("zzz", known=KNOWN).endswith("choose one of hermes, lfm2, mistral")


def test_a_parser_plugin_can_register_any_name():
    assert tool_parser_problem("mine", ("--tool-parser-plugin", "p.py"), known=KNOWN) is None
    assert tool_parser_problem("mine", ("--tool-parser-plugin=p.py",), known=KNOWN) is None


def test_the_installed_vllm_knows_every_parser_the_presets_and_template_checks_name():
    from actors.models import load_preset, preset_names
    from actors.serving.weights import PARSER_MARKERS

    known = known_tool_parsers()
    if known is None:
        pytest.skip("no vLLM installed here: parser names are not checked")
    assert "hermes" in known
    assert {load_preset(name).tool_call_parser for name in preset_names()} <= known
    assert set(PARSER_MARKERS) <= known
