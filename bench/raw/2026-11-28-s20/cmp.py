import json, sys
def load(p):
    out = {}
    for line in open(p):
        o = json.loads(line)
        if 'loss' in o: out[o['step']] = o['loss']
    return out
a, b = load(sys.argv[1]), load(sys.argv[2])
steps = sorted(set(a) & set(b))
worst = max((abs(a[s] - b[s]) / abs(a[s]), s) for s in steps)
print(f"{len(steps)} steps compared: worst relative difference {worst[0]:.2e} at step {worst[1]}; "
      f"step 1 {a[steps[0]]:.9f} / {b[steps[0]]:.9f}, last {a[steps[-1]]:.9f} / {b[steps[-1]]:.9f}")
