import common, json, os, numpy as np
R = json.load(open(os.path.join(common.HERE, 'results_raw.json')))
rec, methods, used = R['rec'], R['methods'], R['used']
MAINB = [700, 1400, 2800]; ALLB = R['budgets']
TUNE = {'conv-26', 'conv-30', 'conv-41'}; VALID = {'conv-42', 'conv-43'}
def arr(half, m, B, cat=None):
    return np.array([q['r'][m][str(B)] for q in rec if q['conv'] in half and (cat is None or q['cat'] == cat)])
def mean(half, m, B, cat=None): return arr(half, m, B, cat).mean()
# selection on tune: mean recall(1-4) over the three main budgets, hybrids only
hyb = [m for m in methods if '|a' in m and not m.startswith('CTRL')]
tune_score = {m: np.mean([mean(TUNE, m, B) for B in MAINB]) for m in methods}
best = max(hyb, key=lambda m: tune_score[m])
bestcos = max([m for m in methods if m.endswith('|cos') and not m.startswith('CTRL')], key=lambda m: tune_score[m])
lines = []
P = lambda *a: lines.append(' '.join(str(x) for x in a))
P(f'n questions: tune={len(arr(TUNE,"bm25",700))} validate={len(arr(VALID,"bm25",700))}; cat1: tune={len(arr(TUNE,"bm25",700,1))} validate={len(arr(VALID,"bm25",700,1))}')
P('chosen on tune (mean recall 1-4 over budgets 700/1400/2800):', best, f'{tune_score[best]:.4f}', '| bm25', f'{tune_score["bm25"]:.4f}', '| best cos-only', bestcos, f'{tune_score[bestcos]:.4f}')
P('')
hdr = '| method | ' + ' | '.join(f'T{B} all / c1' for B in ALLB) + ' | ' + ' | '.join(f'V{B} all / c1' for B in ALLB) + ' | tune-sel |'
P(hdr); P('|' + '---|' * (2 + 2 * len(ALLB)))
for m in methods:
    row = [m]
    for half in (TUNE, VALID):
        for B in ALLB:
            row.append(f'{mean(half,m,B):.3f} / {mean(half,m,B,1):.3f}')
    row.append(f'{tune_score[m]:.4f}')
    P('| ' + ' | '.join(row) + ' |')
P('')
P('Validation gain of chosen setting over BM25 (paired bootstrap over questions, 10k resamples):')
rng = np.random.default_rng(0)
for cat in (None, 1):
    for B in ALLB:
        d = arr(VALID, best, B, cat) - arr(VALID, 'bm25', B, cat)
        idx = rng.integers(0, len(d), (10000, len(d))); bs = d[idx].mean(1)
        lo, hi = np.percentile(bs, [2.5, 97.5])
        P(f'  {"cat1" if cat else "all "} B={B}: bm25={arr(VALID,"bm25",B,cat).mean():.3f} hybrid={arr(VALID,best,B,cat).mean():.3f} '
          f'gain={d.mean():+.3f} CI95=[{lo:+.3f},{hi:+.3f}]  (q better/worse: {(d>0).sum()}/{(d<0).sum()})')
P('')
P('Secondary (not selected; runner-up variants at alpha 0.3), validate gain over BM25, recall 1-4 / cat1 with CI95:')
for m in ['raw384_sif|a0.3', 'raw256pca_sif|a0.3', 'distil256pca_sif|a0.3']:
    if m not in methods or m == best: continue
    for B in ALLB:
        out = []
        for cat in (None, 1):
            d = arr(VALID, m, B, cat) - arr(VALID, 'bm25', B, cat)
            idx = rng.integers(0, len(d), (10000, len(d))); bs = d[idx].mean(1); lo, hi = np.percentile(bs, [2.5, 97.5])
            out.append(f'{d.mean():+.3f} [{lo:+.3f},{hi:+.3f}]')
        P(f'  {m} B={B}: all {out[0]}  cat1 {out[1]}')
# same gain for every alpha of the chosen variant, and tune
v = best.split('|')[0]
P('')
P(f'Per-alpha for variant {v} (recall 1-4, tune -> validate):')
for m in ['bm25', f'{v}|cos'] + [x for x in methods if x.startswith(v + '|a')]:
    P('  ', m, ' '.join(f'B{B}: {mean(TUNE,m,B):.3f}->{mean(VALID,m,B):.3f}' for B in ALLB))
P('')
P('Control (random per-token vectors, SIF) vs chosen, validate recall 1-4 / cat1:')
for m in [x for x in methods if x.startswith('CTRL')]:
    P('  ', m, ' '.join(f'B{B}: {mean(VALID,m,B):.3f}/{mean(VALID,m,B,1):.3f}' for B in ALLB), f'tune-sel {tune_score[m]:.4f}')
for B in ALLB:
    c = 'CTRLrand384_sif|a' + best.split('|a')[1]
    d = arr(VALID, best, B) - arr(VALID, c, B)
    idx = rng.integers(0, len(d), (10000, len(d))); bs = d[idx].mean(1); lo, hi = np.percentile(bs, [2.5, 97.5])
    P(f'  chosen minus control (same alpha) B={B}: {d.mean():+.3f} CI95=[{lo:+.3f},{hi:+.3f}]')
P('')
P('mean tokens used (validate+tune):', {k: round(v, 0) for k, v in used.items() if k.split('@')[0] in ('bm25', best)})
open(os.path.join(common.HERE, 'summary.md'), 'w').write('\n'.join(lines) + '\n')
print('\n'.join(lines))
