#!/usr/bin/env python3
"""Smoke check of a running llama.cpp server: it loaded the model and completes one
short prompt. Exits 0 and prints one line on success; exits 1 saying why otherwise.

    python3 scripts/llama-smoke.py http://127.0.0.1:18080
"""
import json
import sys
import urllib.request


def main() -> int:
    base = sys.argv[1].rstrip("/")
    body = json.dumps({
        "messages": [{"role": "user", "content": "Say hello."}],
        "max_tokens": 8,
        "temperature": 0,
    }).encode()
    request = urllib.request.Request(
        f"{base}/v1/chat/completions", data=body, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            reply = json.load(response)
    except Exception as error:  # a dead server, an HTTP error, a reply that is not JSON
        print(f"smoke check: no completion from {base}: {error}", file=sys.stderr)
        return 1
    usage = reply.get("usage") or {}
    choices = reply.get("choices") or []
    if not choices or usage.get("prompt_tokens", 0) < 1 or usage.get("completion_tokens", 0) < 1:
        print(f"smoke check: {base} answered without a completion: {reply}", file=sys.stderr)
        return 1
    text = (choices[0].get("message") or {}).get("content") or ""
    print(f"smoke check passed: {usage['prompt_tokens']} prompt tokens, "
          f"{usage['completion_tokens']} generated: {text!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
