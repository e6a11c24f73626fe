#!/usr/bin/python3
"""torch_reference.py — attnlab's transformer in PyTorch, for parity and benchmarks.

The module below is the model of src/nn/transformer.c, op for op:

    x = tok_emb[tokens] [+ positions] [-> LayerNorm ln_emb] [-> dropout]
    per block:  x += dropout(attn(ln1(x)));  x += dropout(mlp(ln2(x)))
    logits = head(ln_f(x))

with H heads of width d/H, scores q·kᵀ/√(d/H) ("dot") or β·q̂·k̂ᵀ with q̂ = q/max(‖q‖, 1e-12)
("unit_norm"), an optional causal mask, and a d → ratio·d → d GELU MLP (tanh or erf).
Its parameter names are those of attnlab's model.safetensors, so a checkpoint loads
with load_state_dict(strict=True).

    torch_reference.py bench [--threads default|1] [--rounds N]
        times training steps of the two models of src/bench/bench.c and prints
        "RESULT torch <model> threads=<default|1> ms=<ms/step> gflops=<GFLOP/s> nthreads=<n>"
    torch_reference.py parity --model M.safetensors --data D.safetensors
        rebuilds the model from M (its config metadata and weights), runs the batch of D
        in float64 and compares logits, loss and every parameter gradient with the C
        results stored in D; exit 1 when one is off by more than 1e-4 (relative).

The data file D holds: tokens I32 (B,T), targets I32 (B,T; −1 = ignored), logits F32
(B,T,C), loss F32 (one value) and "grad.<name>" F32 for every parameter.

Only /usr/bin/python3 has torch (Debian's python3-torch); this uses no other package
but numpy.
"""
import argparse
import json
import math
import os
import statistics
import struct
import sys
import time


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("bench", help="time training steps of the bench models")
    b.add_argument("--threads", choices=["default", "1"], default="default",
                   help="'1': one intra-op thread and one BLAS thread; 'default': torch's own choice")
    b.add_argument("--rounds", type=int, default=5, help="timed rounds per model (median is reported)")
    q = sub.add_parser("parity", help="compare with attnlab's forward/backward results")
    q.add_argument("--model", required=True, help="attnlab model.safetensors")
    q.add_argument("--data", required=True, help="tokens, targets and the C results")
    return p.parse_args(argv)


if __name__ == "__main__":
    ARGS = parse_args(sys.argv[1:])
    if getattr(ARGS, "threads", None) == "1":
        # OpenBLAS and OpenMP read these once, when torch (or numpy) loads them.
        os.environ.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")

import numpy as np  # noqa: E402  (after the thread setting above)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

UNIT_NORM_EPS = 1e-12       # ad_l2norm's eps in transformer.c
PARITY_TOL = 1e-4           # max |c − t| / max(max |t|, 1e-6) per tensor
ZERO_REF = 1e-12            # a float64 reference below this is zero in exact arithmetic


def f32(x):
    """A config float as the C side holds it (float, not double)."""
    return float(np.float32(x))


# ---- safetensors (json + struct; no safetensors package) -----------------------------

ST_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4",
             "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "?"}


def read_safetensors(path):
    """Returns ({name: numpy array}, metadata dict)."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = memoryview(blob)[8 + n:]
    tensors = {}
    for name, e in header.items():
        begin, end = e["data_offsets"]
        arr = np.frombuffer(data[begin:end], dtype=ST_DTYPES[e["dtype"]])
        tensors[name] = arr.reshape(e["shape"])
    return tensors, meta


# ---- the model ------------------------------------------------------------------------

def sinusoid_table(max_len, d):
    """PE[p, i] = sin/cos(p / 10000^((i − i%2)/d)), computed in double and stored as
    float like fill_sinusoid() in transformer.c."""
    pe = np.empty((max_len, d), dtype=np.float64)
    for i in range(d):
        angle = np.arange(max_len, dtype=np.float64) / math.pow(10000.0, (i - i % 2) / d)
        pe[:, i] = np.cos(angle) if i % 2 else np.sin(angle)
    return torch.from_numpy(pe.astype(np.float32))


class Attention(nn.Module):
    def __init__(self, mc):
        super().__init__()
        d, a = mc["d_model"], mc["attention"]
        self.n_heads = mc["n_heads"]
        self.unit_norm = a["score"] == "unit_norm"
        self.scale = f32(a["beta"] if self.unit_norm else 1.0 / math.sqrt(d // self.n_heads))
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

    def forward(self, h, mask):
        B, T, d = h.shape

        def heads(x):                           # (B, T, d) → (B, H, T, d/H)
            return x.view(B, T, self.n_heads, d // self.n_heads).transpose(1, 2)

        q, k, v = heads(self.q(h)), heads(self.k(h)), heads(self.v(h))
        if self.unit_norm:
            q = F.normalize(q, dim=-1, eps=UNIT_NORM_EPS)
            k = F.normalize(k, dim=-1, eps=UNIT_NORM_EPS)
        scores = self.scale * (q @ k.transpose(-2, -1))
        if mask is not None:
            scores = scores + mask
        y = torch.softmax(scores, dim=-1) @ v
        return self.o(y.transpose(1, 2).reshape(B, T, d))


class Mlp(nn.Module):
    def __init__(self, mc):
        super().__init__()
        d, hidden = mc["d_model"], mc["mlp_ratio"] * mc["d_model"]
        self.approximate = {"gelu_tanh": "tanh", "gelu_erf": "none"}[mc["activation"]]
        self.fc1, self.fc2 = nn.Linear(d, hidden), nn.Linear(hidden, d)

    def forward(self, h):
        return self.fc2(F.gelu(self.fc1(h), approximate=self.approximate))


class Block(nn.Module):
    def __init__(self, mc):
        super().__init__()
        d, eps = mc["d_model"], f32(mc["ln_eps"])
        self.ln1, self.attn = nn.LayerNorm(d, eps=eps), Attention(mc)
        self.ln2, self.mlp = nn.LayerNorm(d, eps=eps), Mlp(mc)
        self.drop = nn.Dropout(mc["dropout"])

    def forward(self, x, mask):
        x = x + self.drop(self.attn(self.ln1(x), mask))
        return x + self.drop(self.mlp(self.ln2(x)))


SUPPORTED = {"attention.type": ("softmax",), "attention.score": ("dot", "unit_norm"),
             "positional": ("none", "learned", "sinusoidal"), "activation": ("gelu_tanh", "gelu_erf")}


def check_supported(mc):
    """Refuses a config this reference would not reproduce exactly."""
    for key, known in SUPPORTED.items():
        value = mc["attention"][key.split(".")[1]] if key.startswith("attention.") else mc[key]
        if value not in known:
            raise ValueError(f"torch_reference: model.{key} = '{value}' is not implemented here")


class Transformer(nn.Module):
    """mc: the "model" section of an attnlab config (every key present)."""

    def __init__(self, mc, vocab_size, n_classes, max_len):
        super().__init__()
        check_supported(mc)
        d = mc["d_model"]
        self.causal = mc["attention"]["causal"]
        self.positional = mc["positional"]
        self.tok_emb = nn.Embedding(vocab_size, d)
        if self.positional == "learned":
            self.pos_emb = nn.Embedding(max_len, d)
        elif self.positional == "sinusoidal":
            self.register_buffer("sinusoid", sinusoid_table(max_len, d), persistent=False)
        self.ln_emb = nn.LayerNorm(d, eps=f32(mc["ln_eps"])) if mc["embed_layernorm"] else None
        self.drop = nn.Dropout(mc["dropout"])
        self.blocks = nn.ModuleList(Block(mc) for _ in range(mc["n_layers"]))
        self.ln_f = nn.LayerNorm(d, eps=f32(mc["ln_eps"]))
        self.head = nn.Linear(d, n_classes)

    def embed(self, tokens):
        T = tokens.shape[1]
        x = self.tok_emb(tokens)
        if self.positional == "learned":
            x = x + self.pos_emb.weight[:T]
        elif self.positional == "sinusoidal":
            x = x + self.sinusoid[:T]
        if self.ln_emb is not None:
            x = self.ln_emb(x)
        return self.drop(x)

    def forward(self, tokens):
        """tokens (B, T) int64 → logits (B, T, n_classes)."""
        T = tokens.shape[1]
        x = self.embed(tokens)
        mask = None
        if self.causal:
            mask = torch.full((T, T), -math.inf, dtype=x.dtype).triu(1)
        for block in self.blocks:
            x = block(x, mask)
        return self.head(self.ln_f(x))


def loss_fn(logits, targets):
    """Mean cross-entropy over positions whose target is not −1 (ad_cross_entropy)."""
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-1)


def flops_per_seq(mc, n_classes, T):
    """Forward matmul FLOPs of one sequence: model_flops_per_seq() in transformer.c."""
    d = mc["d_model"]
    hidden = mc["mlp_ratio"] * d
    per_layer = 2.0 * T * d * d * 4 + 2.0 * T * T * d * 2 + 2.0 * T * d * hidden * 2
    return per_layer * mc["n_layers"] + 2.0 * T * d * n_classes


# ---- parity ---------------------------------------------------------------------------

def load_reference(model_path, max_len):
    """The Transformer of an attnlab model.safetensors, weights loaded, in float64."""
    weights, meta = read_safetensors(model_path)
    mc = json.loads(meta["config"])["model"]
    if "pos_emb.weight" in weights:
        max_len = weights["pos_emb.weight"].shape[0]
    model = Transformer(mc, weights["tok_emb.weight"].shape[0], weights["head.weight"].shape[0], max_len)
    model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in weights.items()}, strict=True)
    return model.double().eval()                      # float64 reference; dropout off


def torch_results(model, tokens, targets):
    """[(name, torch value)] for logits, loss and "grad.<name>" of every parameter."""
    logits = model(tokens)
    loss = loss_fn(logits, targets)
    loss.backward()
    out = [("logits", logits.detach().numpy()), ("loss", loss.detach().numpy().reshape(-1))]
    return out + [("grad." + n, p.grad.numpy()) for n, p in model.named_parameters()]


def rel_err(c, t, scale):
    """max |c − t| / max(scale, 1e-6); NaN anywhere counts as infinitely wrong."""
    e = float(np.max(np.abs(c.astype(np.float64) - t)) / max(scale, 1e-6))
    return math.inf if math.isnan(e) else e


def parity(model_path, data_path):
    data, _ = read_safetensors(data_path)
    tokens = torch.from_numpy(data["tokens"].astype(np.int64))
    targets = torch.from_numpy(data["targets"].astype(np.int64))
    results = torch_results(load_reference(model_path, tokens.shape[1]), tokens, targets)
    # A gradient that is zero in exact arithmetic has no scale of its own (the key bias
    # with dot scores: softmax ignores a constant added to a score row); C's float
    # rounding there is measured against the model's largest gradient instead.
    max_grad = max(float(np.max(np.abs(t))) for name, t in results if name.startswith("grad."))
    errs = []
    for name, t in results:
        if name not in data:
            sys.exit(f"parity: {data_path} has no tensor '{name}'")
        c = data[name].reshape(t.shape) if name == "loss" else data[name]
        if c.shape != t.shape:
            sys.exit(f"parity: {name}: C shape {c.shape} but torch shape {t.shape}")
        scale = float(np.max(np.abs(t)))
        zero = scale < ZERO_REF and name.startswith("grad.")
        e = rel_err(c, t, max_grad if zero else scale)
        note = " (exactly 0: vs largest grad)" if zero else ""
        print(f"  {name:<34} rel err {e:.3e}  {'ok' if e <= PARITY_TOL else 'FAIL'}{note}")
        errs.append((e, name))
    worst, worst_name = max(errs)
    if worst > PARITY_TOL:
        print(f"parity FAILED: worst tensor {worst_name}: rel err {worst:.3e} > {PARITY_TOL:g}")
        return 1
    print(f"parity ok: {len(errs)} tensors, worst {worst_name} rel err {worst:.3e} <= {PARITY_TOL:g}")
    return 0


# ---- bench ----------------------------------------------------------------------------

def bench_model_config(n_layers, n_heads, d, score, causal, positional):
    """A full "model" config section as bench.c makes it (cfg_defaults + changes)."""
    return {"d_model": d, "n_layers": n_layers, "n_heads": n_heads, "mlp_ratio": 4,
            "activation": "gelu_tanh", "positional": positional, "embed_layernorm": False,
            "dropout": 0.0, "ln_eps": 1e-5,
            "attention": {"type": "softmax", "score": score, "beta": 0.1, "causal": causal}}


# name, model config, vocab, classes, T, batch, steps per round — as in src/bench/bench.c
BENCH_MODELS = [
    ("match2", bench_model_config(1, 1, 64, "unit_norm", False, "none"), 37, 2, 32, 32, 100),
    ("causal", bench_model_config(2, 4, 128, "dot", True, "learned"), 16, 16, 100, 32, 10),
]
WARMUP_STEPS = 3


class BenchCase:
    """One bench model with its optimizer and a fixed random batch."""

    def __init__(self, name, mc, vocab, n_classes, T, batch, steps):
        self.name, self.steps = name, steps
        self.model = Transformer(mc, vocab, n_classes, T)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8)
        g = torch.Generator().manual_seed(7)
        self.tokens = torch.randint(vocab, (batch, T), generator=g)
        self.targets = torch.randint(n_classes, (batch, T), generator=g)
        self.flops = 3.0 * flops_per_seq(mc, n_classes, T) * batch   # forward + backward
        self.ms = []

    def step(self):
        self.opt.zero_grad(set_to_none=True)
        loss_fn(self.model(self.tokens), self.targets).backward()
        self.opt.step()

    def time_round(self):
        """Appends the mean ms per step of `steps` steps, after a short warm-up."""
        for _ in range(WARMUP_STEPS):
            self.step()
        t0 = time.perf_counter()
        for _ in range(self.steps):
            self.step()
        self.ms.append(1000.0 * (time.perf_counter() - t0) / self.steps)


def bench(threads, rounds):
    if threads == "1":
        torch.set_num_threads(1)
    torch.manual_seed(1)
    cases = [BenchCase(*spec) for spec in BENCH_MODELS]
    print(f"torch {torch.__version__} bench: threads={threads} (torch intra-op threads "
          f"{torch.get_num_threads()}), {rounds} rounds, median reported")
    for _ in range(rounds):              # rounds alternate models, as bench.c does
        for case in cases:
            case.time_round()
    for case in cases:
        ms = statistics.median(case.ms)
        gflops = case.flops / (ms * 1e-3) / 1e9
        print(f"RESULT torch {case.name} threads={threads} ms={ms:.4f} gflops={gflops:.2f} "
              f"nthreads={torch.get_num_threads()}")
    return 0


def main(args):
    if args.command == "parity":
        return parity(args.model, args.data)
    if args.rounds < 1:
        sys.exit("bench: --rounds must be >= 1")
    return bench(args.threads, args.rounds)


if __name__ == "__main__":
    sys.exit(main(ARGS))
