#!/bin/bash
# Recall 1-4 / any / fully covered / categories 1-4 on both halves at 1,000 and
# 2,000 tokens (layered, window 20, --dates calendar); extra arguments go to memory_bench.
# The experiment's switches are environment variables (see README.md).
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
B=$ROOT/target/release/memory_bench
D=${LOCOMO:-$ROOT/../shared/bench/locomo/locomo_dev.json}
for split in tune validate; do for budget in 1000 2000; do
  "$B" --data "$D" --strategy layered --window 20 --budget $budget --split $split \
      --dates calendar --json "$@" 2>/dev/null | python3 -c "
import json, sys
r = json.load(sys.stdin)['evidence_recall']; c = r['by_category']
print('%-8s %d  %.3f  any %.3f full %.3f | %s' % ('$split', $budget, r['overall'],
      r['any_evidence'], r['fully_covered'], ' '.join('%.3f' % c[k] for k in '1234')))"
done; done
