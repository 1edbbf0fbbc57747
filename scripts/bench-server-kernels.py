#!/usr/bin/env python3
"""Prompt and generation speed of llama.cpp server builds, side by side.

Each binary serves the demo model on its own port; rounds alternate between them so
drift on a noisy machine hits every build alike. Each request reads a ~600-token
prompt with the server's prompt cache off, then generates 64 tokens.

    python3 scripts/bench-server-kernels.py NAME=BINARY [NAME=BINARY ...] [--rounds N]

The portable build is `$(bash scripts/llama-server.sh build-dir)/bin/llama-server`.
"""
import json
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROMPT = " ".join(
    f"Report {i}: corridor {i} has flickering lights, loud fans and a door that sticks."
    for i in range(30)
) + "\nSummarise the reports."


def post(port, body):
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/completion", data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as response:
        return json.load(response)


def wait_healthy(port, process):
    for _ in range(240):
        if process.poll() is not None:
            sys.exit(f"the server on port {port} exited with {process.returncode}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
            return
        except Exception:
            time.sleep(0.5)
    sys.exit(f"the server on port {port} never became healthy")


def main():
    args = sys.argv[1:]
    rounds = 5
    if "--rounds" in args:
        at = args.index("--rounds")
        rounds = int(args[at + 1])
        del args[at:at + 2]
    builds = [arg.split("=", 1) for arg in args]
    if not builds or any(len(b) != 2 for b in builds):
        sys.exit(__doc__)
    model = subprocess.check_output(["bash", str(ROOT / "scripts/fetch-model.sh"), "--path"], text=True).strip()
    servers = []
    try:
        for offset, (name, binary) in enumerate(builds):
            port = 18200 + offset
            process = subprocess.Popen(
                [binary, "-m", model, "--host", "127.0.0.1", "--port", str(port), "-c", "4096", "-t", "2"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            servers.append((name, port, process))
            wait_healthy(port, process)
        speeds = {name: ([], []) for name, _, _ in servers}
        body = {"prompt": PROMPT, "n_predict": 64, "temperature": 0, "cache_prompt": False,
                "ignore_eos": True}
        for name, port, _ in servers:
            post(port, body)  # warm-up
        for _ in range(rounds):
            for name, port, _ in servers:
                timings = post(port, body)["timings"]
                speeds[name][0].append(timings["prompt_per_second"])
                speeds[name][1].append(timings["predicted_per_second"])
        for name, (prompt, generation) in speeds.items():
            print(f"{name}: prompt {statistics.median(prompt):.0f} tok/s "
                  f"({min(prompt):.0f}-{max(prompt):.0f}), generation {statistics.median(generation):.1f} tok/s "
                  f"({min(generation):.1f}-{max(generation):.1f}), {rounds} rounds, "
                  f"{timings['prompt_n']} prompt tokens")
    finally:
        for _, _, process in servers:
            process.terminate()
            process.wait()


if __name__ == "__main__":
    main()
