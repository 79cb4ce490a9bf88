"""A NaN or infinite number in an option or a configuration value is a usage or
configuration error naming where it is (exit 2), never a silent NaN that turns a gate,
a timeout or a sample off (issue 28, item 24)."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from recallbench.cli import main
from recallbench.cli._types import FiniteFloat
from recallbench.core import DatasetError
from recallbench.systems._profile import load_profile, shipped_profiles


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN"])
def test_run_timeout_must_be_finite(tmp_path: Path, value: str) -> None:
    result = CliRunner().invoke(
        main, ["run", "--timeout", value, "--no-store", "--out", str(tmp_path / "out")]
    )
    assert result.exit_code == 2, result.output
    assert "'--timeout'" in result.output and "is not a finite number" in result.output
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_a_gate_threshold_must_be_finite(tmp_path: Path, value: str) -> None:
    """`min = nan` failed every gate (exit 1) instead of being a configuration error."""
    out = tmp_path / "out"
    assert CliRunner().invoke(main, ["run", "--no-store", "--out", str(out), "-q"]).exit_code == 0
    config = tmp_path / "recallbench.toml"
    config.write_text(f'[gates.measures."mrr@10"]\nmin = {value}\n')
    result = CliRunner().invoke(main, ["gate", "--config", str(config), str(out)])
    assert result.exit_code == 2, result.output
    assert 'gates.measures["mrr@10"].min: input should be a finite number' in result.output
    assert json.loads((out / "report.json").read_text())  # the report is untouched


def test_a_profile_timeout_must_be_finite(tmp_path: Path) -> None:
    shipped = shipped_profiles()["server-memory"].read_text()
    assert "call_timeout = 30\n" in shipped
    profile = tmp_path / "memory.toml"
    profile.write_text(shipped.replace("call_timeout = 30\n", "call_timeout = nan\n"))
    with pytest.raises(DatasetError) as caught:
        load_profile(profile)
    assert [str(p) for p in caught.value.problems] == [
        "server.call_timeout: input should be a finite number, got NaN"
    ]


def _commands(group: click.Command, path: str = "recallbench") -> list[tuple[str, click.Command]]:
    found = [(path, group)]
    if isinstance(group, click.Group):
        context = click.Context(group)
        for name in group.list_commands(context):
            command = group.get_command(context, name)
            assert command is not None
            found += _commands(command, f"{path} {name}")
    return found


def test_every_number_option_of_every_command_refuses_nan() -> None:
    """`proxy --call-timeout nan` exited 70, `--shadow-percent nan` mirrored nothing: every
    float option is a FiniteFloat, which refuses nan and inf as a usage error."""
    floats = [
        f"{path} {param.opts[0]}"
        for path, command in _commands(main)
        for param in command.params
        if isinstance(param.type, click.types.FloatParamType)
    ]
    assert len(floats) >= 15  # proxy, shadow, run, power, compare... all seen
    loose = [
        f"{path} {param.opts[0]}"
        for path, command in _commands(main)
        for param in command.params
        if isinstance(param.type, click.types.FloatParamType)
        and not isinstance(param.type, FiniteFloat)
    ]
    assert loose == []


@pytest.mark.parametrize(
    "arguments",
    [
        ["proxy", "--call-timeout", "nan", "--", "true"],
        ["proxy", "--shadow-percent", "nan", "--", "true"],
        ["shadow", "start", "--alpha", "nan"],
        ["shadow", "start", "--sample-percent", "inf"],
    ],
)
def test_nan_in_a_proxy_or_shadow_option_is_a_usage_error(arguments: list[str]) -> None:
    result = CliRunner().invoke(main, arguments)
    assert result.exit_code == 2, result.output
    assert "is not a finite number" in result.output
