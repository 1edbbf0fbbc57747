"""A random search of RecallConfig's ranking knobs on the tune half of LoCoMo.

BENCHMARKS.md ("The ranking's knobs searched again on the tune half") has the
result. Run from the repository root, after
`cargo build --release -p bevy_npc_memory_bench --bin memory_bench`:

    python3 bench/prototypes/knob_search/search.py SEED SETTINGS

Prints one line per setting (recall 1-4 at 1,000 and 2,000 tokens, their mean,
the setting) and writes the best 20 to top.json in the working directory.
"""
import json, os, random, subprocess, sys

ROOT = os.getcwd()
B = os.path.join(ROOT, "target/release/memory_bench")
DATA = os.environ.get("LOCOMO", "../shared/bench/locomo/locomo_dev.json")
def run(split, budget, over):
    cmd = [B, "--data", DATA, "--strategy", "layered", "--window", "20", "--budget", str(budget),
           "--split", split, "--dates", "calendar", "--json"]
    if over: cmd += ["--recall-json", json.dumps(over)]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=True).stdout
    r = json.loads(out)["evidence_recall"]
    return r["overall"], r["by_category"]
space = {
  "bm25_k1": [0.6, 0.9, 1.2, 1.5, 2.0],
  "bm25_b": [0.3, 0.5, 0.75, 0.9],
  "neighbour_weight": [0.3, 0.5, 0.7],
  "neighbour_after_weight": [0.6, 0.8, 0.95],
  "passage_weight": [0.1, 0.25, 0.4],
  "passage_span": [1, 2, 3, 4],
  "player_weight": [1.0, 1.1, 1.2],
  "common_term_weight": [0.1, 0.2, 0.4],
}
random.seed(int(sys.argv[1]) if len(sys.argv) > 1 else 16)
base = {}
res = []
b1, _ = run("tune", 1000, base); b2, _ = run("tune", 2000, base)
print("base", b1, b2, (b1+b2)/2, flush=True)
for i in range(int(sys.argv[2]) if len(sys.argv) > 2 else 120):
    over = {k: random.choice(v) for k, v in space.items()}
    r1, c1 = run("tune", 1000, over); r2, c2 = run("tune", 2000, over)
    res.append(((r1+r2)/2, r1, r2, over, c1, c2))
    print(i, round(r1,4), round(r2,4), round((r1+r2)/2,4), json.dumps(over), flush=True)
res.sort(key=lambda x: -x[0])
json.dump(res[:20], open("top.json", "w"), indent=1)
