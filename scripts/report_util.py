"""Shared by the benchmark scripts: appending entries to a JSON report."""
import json
import os


def append_entries(path, section, entries, benchmark="scale"):
    """Appends entries to the list `section` of the JSON report at path (made if missing)."""
    report = {"benchmark": benchmark}
    if os.path.exists(path):
        with open(path) as f:
            report = json.load(f)
    report.setdefault(section, []).extend(entries)
    with open(path, "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
