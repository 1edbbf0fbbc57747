import common, os, numpy as np, sys
sys.argv=['x']
import distill
from tokenizers import Tokenizer
tok = Tokenizer.from_file(os.path.join(common.MODEL, 'tokenizer.json')); tok.no_padding(); tok.no_truncation()
s='Hey Mel! Good to see you!'
ids=tok.encode(s).ids; print(ids, tok.encode(s).tokens)
import torch
from transformers import AutoModel, AutoTokenizer
m=AutoModel.from_pretrained(common.MODEL).eval(); t=AutoTokenizer.from_pretrained(common.MODEL)
enc=t([s],return_tensors='pt'); print(enc['input_ids'])
with torch.no_grad(): hs=m(**enc, output_hidden_states=True).hidden_states
x = np.array(ids)[None]; mask=np.ones_like(x,dtype=np.float32)
# stepwise compare
P=distill.P
e = distill.ln(P['we'][x]+P['pe'][np.arange(x.shape[1])][None]+P['te'][0][None,None],*P['eln'])
print('emb diff', np.abs(e-hs[0].numpy()).max())
out=distill.forward(x,mask); print('final diff', np.abs(out-hs[-1].numpy()).max())
from sentence_transformers import SentenceTransformer
stm=SentenceTransformer(common.MODEL, device='cpu'); print(stm)
st=stm.encode([s]); mine=out.mean(1); mine/=np.linalg.norm(mine); print('st diff',np.abs(st-mine).max(), np.linalg.norm(st))
