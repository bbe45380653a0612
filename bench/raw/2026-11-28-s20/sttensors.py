# sttensors.py A B: whether two safetensors files hold the same tensors, byte for byte (their
# metadata, such as the step, may differ).
import json, struct, sys
def load(p):
    b = open(p, 'rb').read()
    n = struct.unpack('<Q', b[:8])[0]
    h = json.loads(b[8:8 + n])
    data = b[8 + n:]
    return {k: data[v['data_offsets'][0]:v['data_offsets'][1]] for k, v in h.items() if k != '__metadata__'}
a, b = load(sys.argv[1]), load(sys.argv[2])
same = a.keys() == b.keys() and all(a[k] == b[k] for k in a)
print(f"{len(a)} tensors: {'the same bytes' if same else 'DIFFER'}")
