"""Write the latest `gym redteam --json` report into docs/security.md as a table.

    gym redteam --json > trajectories/redteam.json
    python scripts/security_table.py trajectories/redteam.json [--section runc]

Replaces the section between ``<!-- redteam:NAME -->`` and ``<!-- /redteam:NAME -->``
(NAME: the report's runtime unless ``--section`` says otherwise); the rest of the
document is left as it is.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "security.md"


def cell(text: str, limit: int = 220) -> str:
    """Text fit for one table cell: one line, pipes escaped, long text cut."""
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def table(report: dict) -> str:
    """The report as a Markdown section: a summary line and one row per check."""
    rows = report["rows"]
    held = sum(r["held"] for r in rows)
    gaps = [r for r in rows if not r["held"] and r.get("gap")]
    failed = [r for r in rows if not r["held"] and not r.get("gap")]
    runtime = report["runtime"]
    option = f" --runtime {runtime}" if runtime != "runc" else ""
    lines = [
        f"Command: `gym redteam --json{option}` (seed {report['seed']}); machine: "
        f"{platform.system()} {platform.machine()}; runtime `{runtime}`; "
        f"{report['seconds'] / 60:.0f} min wall.",
        "",
        f"**{held}/{len(rows)} held**; {len(gaps)} known gaps; "
        f"{len(failed)} not held without a known gap.",
    ]
    if report.get("skipped"):
        lines.append(f"Not run: {'; '.join(report['skipped'])}.")
    lines += [
        "",
        "| row | kind | env | expected | observed | held |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        mark = "yes" if r["held"] else f"**no** (gap: {r['gap']})" if r.get("gap") else "**NO**"
        env = r["env"].removeprefix("boxgym/")
        also = [e.removeprefix("boxgym/") for e in r.get("covers", []) if e != r["env"]]
        if also:
            env += f" (covers {', '.join(also)})"
        lines.append(
            f"| `{cell(r['name'], 80)}` | {r['kind']} | {env} | {cell(r['expected'])} "
            f"| {cell(r['observed'])} | {mark} |"
        )
    return "\n".join(lines)


def write_section(name: str, body: str, doc: Path = DOC) -> None:
    """Replace (or append) the section ``name`` of the document."""
    text = doc.read_text()
    start, end = f"<!-- redteam:{name} -->", f"<!-- /redteam:{name} -->"
    block = f"{start}\n{body.strip()}\n{end}"
    if start in text:
        text = re.sub(re.escape(start) + r".*?" + re.escape(end), lambda _: block, text, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    doc.write_text(text)


def main(argv: list[str]) -> int:
    """Read a report and write its section."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", help="a `gym redteam --json` output file ('-' for stdin)")
    parser.add_argument("--section", help="section name (default: the report's runtime)")
    args = parser.parse_args(argv)
    raw = sys.stdin.read() if args.report == "-" else Path(args.report).read_text()
    report = json.loads(raw)
    write_section(args.section or report["runtime"], table(report))
    print(f"updated {DOC}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
