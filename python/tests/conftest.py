# SPDX-License-Identifier: Apache-2.0
"""Shared test plumbing: the agreement counts every comparison reports, printed in pytest's
terminal summary (so they show without -s)."""

import pytest

_report_lines = []


@pytest.fixture(scope="session")
def report():
    """report(line): adds a line to the 'qconv agreement' section of the summary."""
    def add(line):
        print(line)
        _report_lines.append(line)
    return add


def pytest_terminal_summary(terminalreporter):
    if _report_lines:
        terminalreporter.section("qconv agreement")
        for line in _report_lines:
            terminalreporter.write_line(line)
