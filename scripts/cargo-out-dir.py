"""Prints the build-script output folder (OUT_DIR) of one package, read from
cargo's `--message-format=json` messages on standard input; prints nothing when
the build has no such package."""

import json
import sys

package = sys.argv[1]
found = ""
for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    if message.get("reason") != "build-script-executed":
        continue
    # A package id names the package as `...#name@version` or `name version (...)`.
    package_id = message.get("package_id", "")
    if f"/{package}#" in package_id or f"#{package}@" in package_id or package_id.startswith(f"{package} "):
        found = message.get("out_dir", "")
print(found)
