#!/usr/bin/env python3
"""Cuts a failed state-machine sequence down to the steps the failure needs.

When a state-machine test fails, the sequence proptest shrank it to is kept as JSON
in cargo's scratch folder (the test prints where: target/tmp/<test>.failed.json).
Proptest cannot always shrink far: a failure that is a timeout costs the whole wait
on every try. This plays the sequence again with steps left out (delta debugging,
each try a fresh app, waits cut to --wait seconds) and keeps what still fails the
same way, then writes <file>.cut.json and prints the steps left, ready to become a
named test.

    python3 scripts/state-machine-cut.py target/tmp/state_machine-state_machine_long.failed.json
"""

import argparse
import json
import os
import re
import subprocess
import sys

TEST = "state_machine::replay::replay_a_kept_sequence"


def test_binary():
    """Builds the integration tests and returns their executable."""
    out = subprocess.run(
        ["cargo", "test", "--all-features", "--test", "integration", "--no-run",
         "--message-format=json"],
        check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        message = json.loads(line)
        if message.get("target", {}).get("name") == "integration" and message.get("executable"):
            return message["executable"]
    sys.exit("no integration test executable was built")


def play(binary, sequence, keep, wait):
    env = dict(os.environ, STATE_MACHINE_SEQUENCE=sequence, STATE_MACHINE_WAIT_SECS=str(wait))
    if keep is not None:
        env["STATE_MACHINE_KEEP"] = ",".join(map(str, keep))
    run = subprocess.run([binary, TEST, "--ignored", "--exact", "--test-threads", "1"],
                         env=env, capture_output=True, text=True)
    return run.returncode == 0, run.stdout + run.stderr


def failure(output):
    """The first line of the panic's message."""
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if re.search(r"panicked at .*:\d+:\d+:$", line) and i + 1 < len(lines):
            return lines[i + 1]
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sequence", help="a kept sequence (.failed.json)")
    parser.add_argument("--wait", type=int, default=10, help="seconds a wait may take (10)")
    parser.add_argument("--match", help="text the failure must print (default: the first "
                        "60 characters of the whole sequence's panic message)")
    parser.add_argument("--tries", type=int, default=1,
                        help="plays of each cut; one failing the same way keeps it (1)")
    parser.add_argument("--binary", help="the integration test executable (default: build it)")
    args = parser.parse_args()

    binary = args.binary or test_binary()
    steps = len(json.load(open(args.sequence, encoding="utf-8"))["steps"])
    passed, output = play(binary, args.sequence, None, args.wait)
    if passed:
        sys.exit(f"the whole sequence ({steps} steps) passes: nothing to cut")
    wanted = args.match or (failure(output) or "")[:60]
    if not wanted:
        sys.exit("the sequence fails without a panic message; pass --match")
    print(f"{steps} steps; the failure: {wanted}", flush=True)

    tries = {}

    def fails(keep):
        key = tuple(keep)
        if key not in tries:
            tries[key] = False
            for _ in range(args.tries):
                passed, output = play(binary, args.sequence, keep, args.wait)
                if not passed and wanted in output:
                    tries[key] = True
                    break
            print(f"  {len(keep):4} steps: {'fails' if tries[key] else 'passes or fails otherwise'}",
                  flush=True)
        return tries[key]

    keep, parts = list(range(steps)), 2
    while len(keep) >= 2:
        size = max(1, len(keep) // parts)
        for start in range(0, len(keep), size):
            candidate = keep[:start] + keep[start + size:]
            if candidate and fails(candidate):
                keep, parts = candidate, max(parts - 1, 2)
                break
        else:
            if size == 1:
                break
            parts = min(len(keep), parts * 2)

    played = json.load(open(args.sequence, encoding="utf-8"))
    played["steps"] = [played["steps"][i] for i in keep]
    cut = re.sub(r"(\.failed)?\.json$", "", args.sequence) + ".cut.json"
    with open(cut, "w", encoding="utf-8") as f:
        json.dump(played, f, ensure_ascii=False, indent=2)
    print(f"{len(keep)} steps still fail the same way (indices {keep}); written to {cut}:")
    for step in played["steps"]:
        print("  " + json.dumps(step, ensure_ascii=False))

if __name__ == "__main__":
    main()
