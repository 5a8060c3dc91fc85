"""The probe's verdicts as a table (80 columns), JSON, JUnit XML and SARIF 2.1.0.

Each writer takes the report of one target and, with ``--direct``, the differences
from the direct run (then only those are the subject: the table lists them alone, JUnit
and SARIF fail the scenarios the proxy breaks). The table goes through
:mod:`mcptape.terminal` (terminal-safe cells, cut to fit); JSON, JUnit and SARIF keep
every word (JUnit drops the characters XML 1.0 cannot carry).
"""

from __future__ import annotations

import re
import textwrap
from typing import IO, Any

import orjson

from mcptape import __version__
from mcptape.probe.compare import Difference
from mcptape.probe.context import FAIL, NOT_OFFERED, PASS, STATUSES
from mcptape.probe.runner import ProbeReport, Result
from mcptape.terminal import one_line
from mcptape.terminal import write_table as table

FORMATS = ("table", "json", "junit", "sarif")
TABLE_WIDTH = 80
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def ok(report: ProbeReport, diffs: list[Difference] | None) -> bool:
    """The exit status's question: no failure (with ``--direct``: nothing the proxy breaks)."""
    if diffs is not None:
        return not any(d.breaks for d in diffs)
    return report.count(FAIL) == 0


def summary(report: ProbeReport, diffs: list[Difference] | None = None) -> str:
    """One line: the counts, or what the proxy breaks (the targets are said on stderr and in JSON)."""
    total = len(report.results)
    if diffs is None:
        return ", ".join(f"{report.count(s)} {s}" for s in STATUSES) + f" of {total} scenarios"
    broken = [d.proxy.scenario.id for d in diffs if d.breaks]
    if not diffs:
        return f"no difference in {total} scenarios"
    if not broken:
        return f"{len(diffs)} of {total} scenarios differ; the proxy breaks none"
    return f"the proxy breaks {len(broken)} of {total} scenarios: {', '.join(broken)}"


# -- table --------------------------------------------------------------------------------


def write_table(
    out: IO[str], report: ProbeReport, diffs: list[Difference] | None, direct: ProbeReport | None
) -> None:
    if diffs is None:
        rows: list[tuple[str, ...]] = [(r.scenario.id, r.status, r.detail) for r in report.results]
        table(out, rows, ("scenario", "result", "detail"), TABLE_WIDTH, keep=("scenario", "result"))
    elif diffs:
        rows = [
            (d.proxy.scenario.id, ("BREAKS " if d.breaks else "") + d.proxy.status, d.direct.status, d.detail)
            for d in diffs
        ]
        table(
            out,
            rows,
            ("scenario", "proxy", "direct", "why"),
            TABLE_WIDTH,
            keep=("scenario", "proxy", "direct"),
        )
    out.write(textwrap.fill(one_line(summary(report, diffs)), TABLE_WIDTH) + "\n")


# -- JSON ---------------------------------------------------------------------------------


def _result(result: Result) -> dict[str, Any]:
    return {
        "id": result.scenario.id,
        "title": result.scenario.title,
        "uses": result.scenario.uses or None,
        "status": result.status,
        "detail": result.detail,
        "seconds": round(result.seconds, 3),
        "protocolVersion": result.revision,
        "session": result.session_id,
    }


def as_json(
    report: ProbeReport, diffs: list[Difference] | None, direct: ProbeReport | None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "target": report.target,
        "ok": ok(report, diffs),
        "summary": {s: report.count(s) for s in STATUSES},
        "scenarios": [_result(r) for r in report.results],
        "recordedIn": report.recorded,
    }
    if direct is not None and diffs is not None:
        out["direct"] = {
            "target": direct.target,
            "summary": {s: direct.count(s) for s in STATUSES},
            "scenarios": [_result(r) for r in direct.results],
        }
        out["differences"] = [
            {
                "id": d.proxy.scenario.id,
                "proxy": d.proxy.status,
                "direct": d.direct.status,
                "breaks": d.breaks,
                "detail": d.detail,
            }
            for d in diffs
        ]
    return out


def write_json(
    out: IO[str], report: ProbeReport, diffs: list[Difference] | None, direct: ProbeReport | None
) -> None:
    out.write(orjson.dumps(as_json(report, diffs, direct), option=orjson.OPT_INDENT_2).decode() + "\n")


# -- JUnit --------------------------------------------------------------------------------


def _xml_text(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def write_junit(
    out: IO[str], report: ProbeReport, diffs: list[Difference] | None, direct: ProbeReport | None
) -> None:
    import xml.etree.ElementTree as ET

    broken = {d.proxy.scenario.id: d for d in diffs or [] if d.breaks}
    name = report.target if direct is None else f"{report.target} against {direct.target}"
    suite = ET.Element("testsuite", name=_xml_text(f"mcptape probe {name}"))
    failures = skipped = 0
    for result in report.results:
        case = ET.SubElement(
            suite,
            "testcase",
            classname="mcptape.probe",
            name=result.scenario.id,
            time=f"{result.seconds:.3f}",
        )
        if diffs is not None:
            diff = broken.get(result.scenario.id)
            if diff is not None:
                failures += 1
                message = f"the proxy breaks it: {diff.proxy.status} through the proxy, {diff.direct.status} directly: {diff.detail}"
                ET.SubElement(case, "failure", message=_xml_text(message), type="broken")
            elif (
                result.status == NOT_OFFERED
                and direct is not None
                and direct.by_id()[result.scenario.id].status == NOT_OFFERED
            ):
                skipped += 1
                ET.SubElement(case, "skipped", message=_xml_text(f"not offered: {result.detail}"))
        elif result.status == FAIL:
            failures += 1
            ET.SubElement(case, "failure", message=_xml_text(result.detail), type="fail")
        elif result.status == NOT_OFFERED:
            skipped += 1
            ET.SubElement(case, "skipped", message=_xml_text(f"not offered: {result.detail}"))
        ET.SubElement(case, "system-out").text = _xml_text(f"{result.status}: {result.detail}")
    suite.set("tests", str(len(report.results)))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suite.set("skipped", str(skipped))
    suite.set("time", f"{sum(r.seconds for r in report.results):.3f}")
    ET.indent(suite)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ET.tostring(suite, encoding="unicode") + "\n")


# -- SARIF --------------------------------------------------------------------------------


def as_sarif(
    report: ProbeReport, diffs: list[Difference] | None, direct: ProbeReport | None
) -> dict[str, Any]:
    """A SARIF 2.1.0 log: one rule per scenario, one result per scenario (kind pass, fail or notApplicable)."""
    rules = [
        {
            "id": r.scenario.id,
            "shortDescription": {"text": r.scenario.title},
            **({"properties": {"uses": r.scenario.uses}} if r.scenario.uses else {}),
        }
        for r in report.results
    ]
    broken = {d.proxy.scenario.id: d for d in diffs or [] if d.breaks}
    where = [{"logicalLocations": [{"name": report.target, "kind": "resource"}]}]
    results = []
    for index, result in enumerate(report.results):
        properties: dict[str, Any] = {"status": result.status}
        if diffs is not None and direct is not None:
            theirs = direct.by_id().get(result.scenario.id)
            properties["direct"] = theirs.status if theirs else None
            diff = broken.get(result.scenario.id)
            kind = "fail" if diff else "pass"
            text = (
                f"The proxy breaks {result.scenario.title}: {diff.proxy.status} through it, "
                f"{diff.direct.status} directly: {diff.detail}"
                if diff
                else f"{result.scenario.title}: {result.status} through the proxy and {properties['direct']} directly"
            )
        else:
            kind = {PASS: "pass", FAIL: "fail", NOT_OFFERED: "notApplicable"}[result.status]
            text = f"{result.scenario.title}: {result.status}: {result.detail}"
        results.append(
            {
                "ruleId": result.scenario.id,
                "ruleIndex": index,
                "kind": kind,
                "level": "error" if kind == "fail" else "none",
                "message": {"text": text},
                "locations": where,
                "properties": properties,
            }
        )
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "mcptape probe",
                        "version": __version__,
                        "informationUri": "https://pypi.org/project/mcptape/",
                        "rules": rules,
                    }
                },
                "invocations": [{"executionSuccessful": True}],
                "results": results,
            }
        ],
    }


def write_sarif(
    out: IO[str], report: ProbeReport, diffs: list[Difference] | None, direct: ProbeReport | None
) -> None:
    out.write(orjson.dumps(as_sarif(report, diffs, direct), option=orjson.OPT_INDENT_2).decode() + "\n")


WRITERS = {"table": write_table, "json": write_json, "junit": write_junit, "sarif": write_sarif}
