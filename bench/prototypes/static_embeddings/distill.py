# Distil a static token table from all-MiniLM-L6-v2 via a NumPy BERT forward pass.
# For each vocab id t: run [CLS] t [SEP], mean-pool the 3 output vectors (the model's pooling).
# Also saves the raw word_embeddings matrix. Output: tables/*.npy
import common, os, sys, time, json
import numpy as np
from safetensors.numpy import load_file

W = load_file(os.path.join(common.MODEL, 'model.safetensors'))
def g(k):
    for p in ('', 'bert.'):
        if p + k in W: return W[p + k].astype(np.float32)
    raise KeyError(k)

H, NH, L = 384, 12, 6
DH = H // NH
def ln(x, w, b, eps=1e-12):
    m = x.mean(-1, keepdims=True); v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * w + b
from math import sqrt
def gelu(x):  # exact erf gelu
    from scipy.special import erf
    return 0.5 * x * (1.0 + erf(x / sqrt(2.0)))

P = {}
P['we'] = g('embeddings.word_embeddings.weight'); P['pe'] = g('embeddings.position_embeddings.weight')
P['te'] = g('embeddings.token_type_embeddings.weight')
P['eln'] = (g('embeddings.LayerNorm.weight'), g('embeddings.LayerNorm.bias'))
layers = []
for i in range(L):
    pre = f'encoder.layer.{i}.'
    layers.append({k: g(pre + v) for k, v in dict(
        qw='attention.self.query.weight', qb='attention.self.query.bias',
        kw='attention.self.key.weight', kb='attention.self.key.bias',
        vw='attention.self.value.weight', vb='attention.self.value.bias',
        ow='attention.output.dense.weight', ob='attention.output.dense.bias',
        l1w='attention.output.LayerNorm.weight', l1b='attention.output.LayerNorm.bias',
        iw='intermediate.dense.weight', ib='intermediate.dense.bias',
        o2w='output.dense.weight', o2b='output.dense.bias',
        l2w='output.LayerNorm.weight', l2b='output.LayerNorm.bias').items()})

def forward(ids, mask):
    B, T = ids.shape
    x = P['we'][ids] + P['pe'][np.arange(T)][None] + P['te'][0][None, None]
    x = ln(x, *P['eln'])
    neg = (1.0 - mask[:, None, None, :]) * -1e9
    for ly in layers:
        x2 = x.reshape(B * T, H)
        q = (x2 @ ly['qw'].T + ly['qb']).reshape(B, T, NH, DH).transpose(0, 2, 1, 3)
        k = (x2 @ ly['kw'].T + ly['kb']).reshape(B, T, NH, DH).transpose(0, 2, 1, 3)
        v = (x2 @ ly['vw'].T + ly['vb']).reshape(B, T, NH, DH).transpose(0, 2, 1, 3)
        a = q @ k.transpose(0, 1, 3, 2) / np.sqrt(DH) + neg
        a = np.exp(a - a.max(-1, keepdims=True)); a /= a.sum(-1, keepdims=True)
        c = (a @ v).transpose(0, 2, 1, 3).reshape(B, T, H)
        c2 = c.reshape(B * T, H)
        x2 = ln(c2 @ ly['ow'].T + ly['ob'] + x2, ly['l1w'], ly['l1b'])
        h = gelu(x2 @ ly['iw'].T + ly['ib'])
        x2 = ln(h @ ly['o2w'].T + ly['o2b'] + x2, ly['l2w'], ly['l2b'])
        x = x2.reshape(B, T, H)
    return x

def encode_ids(seqs):
    T = max(len(s) for s in seqs)
    ids = np.zeros((len(seqs), T), np.int64); mask = np.zeros((len(seqs), T), np.float32)
    for i, s in enumerate(seqs): ids[i, :len(s)] = s; mask[i, :len(s)] = 1
    out = forward(ids, mask)
    e = (out * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    return e

if __name__ == '__main__':
    os.makedirs(os.path.join(common.HERE, 'tables'), exist_ok=True)
    # sanity check vs sentence-transformers (torch) if available
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(common.MODEL, 'tokenizer.json')); tok.no_padding(); tok.no_truncation()
    sents = ['Hey Mel! Good to see you!', 'When did Caroline go to the LGBTQ support group?']
    mine = encode_ids([tok.encode(s).ids for s in sents]); mine /= np.linalg.norm(mine, axis=1, keepdims=True)
    try:
        from sentence_transformers import SentenceTransformer
        st = SentenceTransformer(common.MODEL, device='cpu').encode(sents, normalize_embeddings=True)
        print('max abs diff vs sentence-transformers:', float(np.abs(st - mine).max()), flush=True)
    except Exception as ex:
        print('ST check skipped:', ex, flush=True)
    np.save(os.path.join(common.HERE, 'tables', 'raw_we.npy'), P['we'])
    V = P['we'].shape[0]; CLS, SEP = 101, 102
    out = np.zeros((V, H), np.float32); t0 = time.time(); bs = 2048
    for s in range(0, V, bs):
        ids = np.array([[CLS, t, SEP] for t in range(s, min(V, s + bs))])
        out[s:s + len(ids)] = encode_ids(ids)
        print(s, round(time.time() - t0, 1), flush=True)
    np.save(os.path.join(common.HERE, 'tables', 'distil_mean.npy'), out)
    print('done', time.time() - t0)
