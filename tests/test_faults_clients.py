"""What the TypeScript and Python SDK clients do under each injected fault: docs/faults.md, checked.

scripts/fault_table writes the tables from real runs (tests/helpers/fault_matrix.py); this
test runs the same matrix and fails where a client no longer does what the document says
(then run scripts/fault_table again, and read what changed).
"""

from __future__ import annotations

import pytest

from tests.helpers.fault_matrix import CLIENTS, FAULTS, TRANSPORTS, differences, documented, run_matrix
from tests.helpers.paths import ROOT

pytestmark = pytest.mark.slow

DOC = ROOT / "docs" / "faults.md"


def test_the_document_has_a_cell_for_every_fault_client_and_transport() -> None:
    cells = documented(DOC.read_text(encoding="utf-8"))
    assert set(cells) == {(t, f, c) for t in TRANSPORTS for f in FAULTS for c in CLIENTS}


def test_each_client_does_under_each_fault_what_docs_faults_md_says() -> None:
    results = run_matrix()
    assert differences(DOC.read_text(encoding="utf-8"), results) == []
