# Retrieval experiment: BM25 vs static-embedding cosine vs hybrid fusion on LoCoMo dev.
# Reads LoCoMo in place (LOCOMO, default ../shared/bench/locomo/locomo_dev.json next to the
# repository); writes only derived numbers.
import common, os, re, json, math, sys, time
import numpy as np
from tokenizers import Tokenizer

DATA = os.environ.get('LOCOMO', os.path.join(common.HERE, '..', '..', '..', '..', 'shared', 'bench', 'locomo', 'locomo_dev.json'))
TUNE = ['conv-26', 'conv-30', 'conv-41']; VALID = ['conv-42', 'conv-43']
BUDGETS = [700, 1400, 2000, 2800]
ALPHAS = [0.3, 0.5, 0.7, 0.8]

STOP = set("""a an the and or but if then else of to in on at by for with from as is are was were be been being am
do does did doing have has had having i me my mine myself you your yours yourself he him his himself she her hers herself
it its itself we us our ours ourselves they them their theirs themselves this that these those what which who whom whose
when where why how all any both each few more most other some such no nor not only own same so than too very can will
just should would could shall may might must s t don didn doesn isn aren wasn weren hasn haven hadn won wouldn shouldn
couldn m re ve ll d o y about above after again against below between into through during before over under up down out
off once here there there's also yes yeah oh hey hi lol""".split())

def fold(w):
    if len(w) > 4 and w.endswith('ies'): return w[:-3] + 'y'
    if len(w) > 5 and w.endswith('ing'): return w[:-3]
    if len(w) > 4 and w.endswith('ed'): return w[:-2]
    if len(w) > 3 and w.endswith('s') and not w.endswith('ss'): return w[:-1]
    return w

def bm25_tokens(text):
    return [fold(w) for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOP]

class BM25:
    def __init__(self, docs, k1=1.2, b=0.75):
        self.k1, self.b = k1, b
        self.tfs = []; df = {}
        for d in docs:
            tf = {}
            for w in bm25_tokens(d): tf[w] = tf.get(w, 0) + 1
            self.tfs.append(tf)
            for w in tf: df[w] = df.get(w, 0) + 1
        self.N = len(docs); self.dl = np.array([sum(t.values()) for t in self.tfs], float)
        self.avgdl = self.dl.mean()
        self.idf = {w: math.log(1 + (self.N - n + 0.5) / (n + 0.5)) for w, n in df.items()}
        self.post = {}
        for i, tf in enumerate(self.tfs):
            for w, c in tf.items(): self.post.setdefault(w, []).append((i, c))
    def score(self, q):
        s = np.zeros(self.N)
        for w in set(bm25_tokens(q)):
            if w not in self.post: continue
            idf = self.idf[w]
            for i, c in self.post[w]:
                s[i] += idf * c * (self.k1 + 1) / (c + self.k1 * (1 - self.b + self.b * self.dl[i] / self.avgdl))
        return s

def load():
    data = json.load(open(DATA))
    convs = {}
    for c in data:
        cv = c['conversation']
        sess = sorted([k for k, v in cv.items() if re.fullmatch(r'session_\d+', k) and isinstance(v, list)],
                      key=lambda k: int(k.split('_')[1]))
        turns = []
        for k in sess:
            for t in cv[k]:
                txt = t.get('text', '') or ''
                if t.get('blip_caption'): txt += ' [shares a photo: ' + t['blip_caption'] + ']'
                turns.append((t['dia_id'], txt))
        idx = {d: i for i, (d, _) in enumerate(turns)}
        qs = []; skipped = 0
        for q in c['qa']:
            if q.get('category') not in (1, 2, 3, 4): continue
            ids = []
            for e in q.get('evidence', []):
                ids += [x for x in re.split(r'[;,\s]+', str(e)) if x]
            if not ids or any(x not in idx for x in ids): skipped += 1; continue
            qs.append((q['question'], q['category'], sorted(set(idx[x] for x in ids))))
        convs[c['sample_id']] = dict(turns=turns, qs=qs, skipped=skipped)
    return convs

def cost(txt): return len(txt) // 4 + 4

def fill(order, costs, B):
    n = len(costs); inc = np.zeros(n, bool); used = 0
    for i in order:
        grp = [j for j in (i - 1, i, i + 1) if 0 <= j < n and not inc[j]]
        if not grp: continue
        c = sum(costs[j] for j in grp)
        if used + c <= B:
            inc[grp] = True; used += c
        elif not inc[i] and used + costs[i] <= B:
            inc[i] = True; used += costs[i]
        if used >= B - 5: break
    return inc, used

def mm(s):
    lo, hi = s.min(), s.max()
    return (s - lo) / (hi - lo) if hi > lo else np.zeros_like(s)

# ---------------- static embedding variants ----------------
TOK = Tokenizer.from_file(os.path.join(common.MODEL, 'tokenizer.json')); TOK.no_padding(); TOK.no_truncation()

def tok_ids(texts):
    return [e.ids[1:-1] for e in TOK.encode_batch(texts)]  # drop [CLS]/[SEP]

def pca(table, k):
    mu = table.mean(0); X = table - mu
    # eigen-decomp of covariance (384x384)
    C = X.T @ X / len(X); w, V = np.linalg.eigh(C); V = V[:, ::-1][:, :k]
    return (X @ V).astype(np.float32)

def build_tables():
    T = {}
    tdir = os.path.join(common.HERE, 'tables')
    raw = np.load(os.path.join(tdir, 'raw_we.npy'))
    dis = np.load(os.path.join(tdir, 'distil_mean.npy'))
    V = len(raw); zipf = np.log(1 + np.arange(V, dtype=np.float32))[:, None]
    T['raw384'] = (raw, None)
    T['raw384_sif'] = (raw, 'sif')
    T['distil384'] = (dis, None)
    T['distil384c'] = (dis - dis.mean(0), None)
    p = pca(dis, 256)
    T['distil256pca'] = (p, None)
    T['distil256pca_zipf'] = (p * zipf, None)   # model2vec-style log-rank weighting
    T['distil256pca_sif'] = (p, 'sif')          # SIF weights from the conversation's own token counts
    T['distil384c_sif'] = (dis - dis.mean(0), 'sif')
    T['raw256pca_sif'] = (pca(raw, 256), 'sif')
    # CONTROL: random Gaussian vectors per token (~one-hot bag of WordPieces; no semantics), SIF-weighted
    T['CTRLrand384_sif'] = (np.random.default_rng(0).standard_normal((V, 384)).astype(np.float32), 'sif')
    return T

def embed(ids_list, table, weights=None):
    out = np.zeros((len(ids_list), table.shape[1]), np.float32)
    for i, ids in enumerate(ids_list):
        if not ids: continue
        v = table[ids]
        if weights is not None:
            w = weights[ids]; out[i] = (v * w[:, None]).sum(0) / max(w.sum(), 1e-9)
        else:
            out[i] = v.mean(0)
    n = np.linalg.norm(out, axis=1, keepdims=True); n[n == 0] = 1
    return out / n

def main():
    convs = load()
    tables = build_tables()
    methods = ['bm25'] + [f'{v}|cos' for v in tables] + [f'{v}|a{a}' for v in tables for a in ALPHAS]
    # per question records: (conv, cat, {method: {budget: recall}})
    rec = []; used_tok = {}
    for cid, C in convs.items():
        texts = [t for _, t in C['turns']]; costs = [cost(t) for t in texts]
        bm = BM25(texts)
        tids = tok_ids(texts)
        qids = tok_ids([q for q, _, _ in C['qs']])
        # SIF weights from this conversation's token counts (what a live index would have)
        cnt = np.zeros(30522); 
        for ids in tids: np.add.at(cnt, ids, 1)
        pfreq = cnt / cnt.sum(); sifw = 1e-3 / (1e-3 + pfreq)
        embs = {}
        for v, (tab, wt) in tables.items():
            w = sifw if wt == 'sif' else None
            embs[v] = (embed(tids, tab, w), embed(qids, tab, w))
        n = len(texts); recency = np.arange(n)[::-1] * 1e-9  # tie-break: newer first
        for qi, (q, cat, ev) in enumerate(C['qs']):
            sb = bm.score(q); sbn = mm(sb)
            scores = {'bm25': sb + (np.arange(n)) * 1e-12}
            for v in tables:
                D, Q = embs[v]; cs = D @ Q[qi]; csn = mm(cs)
                scores[f'{v}|cos'] = cs
                for a in ALPHAS:
                    scores[f'{v}|a{a}'] = a * sbn + (1 - a) * csn + np.arange(n) * 1e-12
            r = {}
            for m, s in scores.items():
                order = np.argsort(-s, kind='stable')
                r[m] = {}
                for B in BUDGETS:
                    inc, used = fill(order, costs, B)
                    r[m][B] = float(inc[ev].mean())
                    used_tok.setdefault((m, B), []).append(used)
            rec.append(dict(conv=cid, cat=cat, r=r))
        print(cid, len(C['qs']), 'skipped', C['skipped'], flush=True)
    json.dump(dict(rec=rec, methods=methods, budgets=BUDGETS,
                   used={f'{m}@{B}': float(np.mean(u)) for (m, B), u in used_tok.items()}),
              open(os.path.join(common.HERE, 'results_raw.json'), 'w'))

if __name__ == '__main__':
    main()
