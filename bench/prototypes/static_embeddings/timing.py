# Cost of embedding one message with a static table: WordPiece tokenize + lookup + mean (NumPy).
import common, os, time, json, re, unicodedata
import numpy as np
from tokenizers import Tokenizer
import evalret
convs = evalret.load()
msgs = [t for c in convs.values() for _, t in c['turns']]
print('messages', len(msgs), 'mean chars', np.mean([len(m) for m in msgs]))
vocab = {w.rstrip('\n'): i for i, w in enumerate(open(os.path.join(common.MODEL, 'vocab.txt'), encoding='utf-8'))}

def basic(text):  # BERT BasicTokenizer (lowercase, strip accents, split punctuation)
    text = unicodedata.normalize('NFD', text.lower())
    text = ''.join(ch for ch in text if unicodedata.category(ch) != 'Mn')
    out = []
    for w in text.split():
        cur = ''
        for ch in w:
            cp = ord(ch)
            if (33 <= cp <= 47) or (58 <= cp <= 64) or (91 <= cp <= 96) or (123 <= cp <= 126) or unicodedata.category(ch).startswith('P'):
                if cur: out.append(cur); cur = ''
                out.append(ch)
            else: cur += ch
        if cur: out.append(cur)
    return out

def wordpiece(text):
    ids = []
    for w in basic(text):
        if len(w) > 100: ids.append(100); continue
        s = 0; sub = []
        while s < len(w):
            e = len(w); cur = None
            while s < e:
                piece = w[s:e] if s == 0 else '##' + w[s:e]
                if piece in vocab: cur = vocab[piece]; break
                e -= 1
            if cur is None: sub = [100]; break
            sub.append(cur); s = e
        ids += sub
    return ids

tok = Tokenizer.from_file(os.path.join(common.MODEL, 'tokenizer.json')); tok.no_padding(); tok.no_truncation()
agree = sum(wordpiece(m) == tok.encode(m).ids[1:-1] for m in msgs)
print('pure-python WordPiece agrees with HF tokenizer on', agree, '/', len(msgs))
table = np.random.default_rng(0).standard_normal((30522, 256)).astype(np.float32)
def bench(f, reps=3):
    best = 1e9
    for _ in range(reps):
        t = time.perf_counter()
        for m in msgs: f(m)
        best = min(best, time.perf_counter() - t)
    return best / len(msgs) * 1e6
ntok = np.mean([len(tok.encode(m).ids) - 2 for m in msgs]); print('mean WordPiece tokens/message', ntok)
print('pure-Python WordPiece tokenize: %.1f us/msg' % bench(wordpiece))
print('HF tokenizers (Rust, via Python) encode: %.1f us/msg' % bench(lambda m: tok.encode(m)))
ids_all = [tok.encode(m).ids[1:-1] for m in msgs]
def lm(ids):
    v = table[ids].mean(0); return v / np.linalg.norm(v)
best = 1e9
for _ in range(3):
    t = time.perf_counter()
    for ids in ids_all: lm(ids)
    best = min(best, time.perf_counter() - t)
print('NumPy lookup+mean+normalize (256 dims): %.1f us/msg' % (best / len(msgs) * 1e6))
print('full pure-Python tokenize + NumPy lookup/mean: %.1f us/msg' % bench(lambda m: lm(wordpiece(m))))
for d in (384, 256):
    print(f'table {d} dims: f32 {30522*d*4/1e6:.1f} MB, f16 {30522*d*2/1e6:.1f} MB, int8 {30522*d/1e6:.1f} MB (+ per-row scale {30522*4/1e6:.2f} MB)')
