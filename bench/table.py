#!/usr/bin/python3
"""bench/run's last step: the JSON lines the benches recorded (bench/measure.hpp's record(),
bench/pika_bench.py) become one markdown table, printed, a JSON document (--json) and, with
--results 1, bench/RESULTS.md. See bench/README.md for the formats."""
import argparse
import datetime
import json
import os
import subprocess
import sys


def machine():
    model = "unknown"
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
                break
    except (OSError, subprocess.CalledProcessError):
        pass  # lscpu is util-linux's; without it the model is "unknown", the table is still right
    return {"cpu": model, "cpus": os.cpu_count()}


def figure(value, unit):
    if value is None:
        return "—"
    if abs(value) >= 100:
        text = f"{value:,.0f}"
    elif abs(value) >= 10:
        text = f"{value:.1f}"
    else:
        text = f"{value:.2f}"
    return f"{text} {unit}"


def judged(row):
    """The aim as shown, and whether the ratio meets it: "yes", "no" or "—" (no aim)."""
    aim, ratio = row.get("aim"), row.get("ratio")
    if aim is None:
        return "—", "—"
    lower = row["better"] == "lower"
    shown = f"{'≤' if lower else '≥'} {aim:g}×"
    if ratio is None:
        return shown, "no"
    return shown, "yes" if (ratio <= aim if lower else ratio >= aim) else "no"


def bench_of(row):
    words = row.get("command", "").split()
    if not words:
        return "?"
    program = words[1] if words[0].endswith("python3") and len(words) > 1 else words[0]
    return os.path.splitext(os.path.basename(program))[0]


def own_ratio(row):
    """Whether the bench gave a ratio of its own rather than ours / underneath."""
    ours, underneath, ratio = row.get("ours"), row.get("underneath"), row.get("ratio")
    if None in (ours, underneath, ratio) or underneath == 0:
        return False
    return abs(ratio - ours / underneath) > 0.005 * abs(ratio)


def table(rows):
    out = ["| path | ours | underneath, same run | ratio | aim | met? |", "|---|---:|---|---:|---|---|"]
    for row in rows:
        aim, met = judged(row)
        ratio = "—" if row.get("ratio") is None else f"{row['ratio']:.2f}×" + (" †" if own_ratio(row) else "")
        out.append(f"| {row['name']} ({bench_of(row)}) | {figure(row['ours'], row['unit'])} | "
                   f"{row['against']}: {figure(row['underneath'], row['unit'])} | {ratio} | {aim} | {met} |")
    if any(own_ratio(row) for row in rows):
        out.append("\n† the median of the rounds' ratios, which the bench judges by (bench/README.md), "
                   "not the two figures' quotient")
    return "\n".join(out)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", required=True)
    parser.add_argument("--json", required=True)
    parser.add_argument("--command", required=True)
    parser.add_argument("--quick", default="0")
    parser.add_argument("--results", default="0")
    parser.add_argument("--failed", default="")
    arguments = parser.parse_args()

    entries = [json.loads(line) for line in open(arguments.lines) if line.strip()]
    rows = [entry for entry in entries if entry["kind"] == "row"]
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    about = machine()
    document = {
        "date": now,
        "machine": about,
        "command": arguments.command,
        "quick": arguments.quick == "1",
        "failed": arguments.failed.split(),
        "rows": rows,
        "figures": [entry for entry in entries if entry["kind"] == "figure"],
    }
    with open(arguments.json, "w") as out:
        json.dump(document, out, indent=1, ensure_ascii=False)
        out.write("\n")

    text = table(rows)
    print()
    print(text)
    print()
    met = [judged(row)[1] for row in rows]
    print(f"{len(rows)} rows, {met.count('yes')} aims met, {met.count('no')} not met, "
          f"{met.count('—')} without an aim; JSON in {arguments.json}")
    if arguments.results == "1":
        quick_note = (" A quick run (`--quick`): short runs, smoke figures." if document["quick"] else "")
        failed_note = (f"\n\nFailed: {', '.join(document['failed'])}." if document["failed"] else "")
        kept = analyses_after_the_table("bench/RESULTS.md")
        with open("bench/RESULTS.md", "w") as out:
            out.write(f"# Benchmark results\n\n{now}, on {about['cpu']} ({about['cpus']} CPUs), "
                      f"from `{arguments.command}`.{quick_note} The machine is shared: only the ratios, "
                      f"each measured within one run, mean something (see bench/README.md)."
                      f"{failed_note}\n\n{text}\n{kept}")
        print("bench/RESULTS.md written")
    return 0


def analyses_after_the_table(path):
    """The "## " sections a person wrote below the generated table (several runs of one bench
    read together, say): a new table replaces the old one, never them."""
    try:
        with open(path) as existing:
            text = existing.read()
    except FileNotFoundError:
        return ""
    at = text.find("\n## ")
    return "" if at < 0 else text[at:]


if __name__ == "__main__":
    sys.exit(main())
