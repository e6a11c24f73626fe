#!/usr/bin/python3
"""torch_reference.py — attnlab's transformer in PyTorch, for parity and benchmarks.

The model is python/attnlab_torch.py's Transformer (the model of src/nn/transformer.c,
op for op, with attnlab's parameter names); this script adds the parity check and the
PyTorch side of the benchmark.

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
import math
import os
import statistics
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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from attnlab_torch import MODELS, load_model, loss_fn, read_safetensors  # noqa: E402

PARITY_TOL = 1e-4           # max |c − t| / max(max |t|, 1e-6) per tensor
ZERO_REF = 1e-12            # a float64 reference below this is zero in exact arithmetic


def flops_per_seq(mc, n_classes, T):
    """Forward matmul FLOPs of one sequence: model_flops_per_seq() (include/attnlab/nn/model.h)
    for a softmax or linear transformer, a RetNet or a Mamba."""
    d = mc["d_model"]
    hidden = mc["mlp_ratio"] * d
    if mc.get("type") == "mamba":       # model.h's mamba formula
        E, N, K = mc["mamba"]["expand"] * d, mc["mamba"]["d_state"], mc["mamba"]["d_conv"]
        R = mc["mamba"]["dt_rank"] or -(-d // 16)
        per_layer = 2.0 * T * (2 * d * E + E * (R + 2 * N) + R * E + E * d) + 2.0 * T * E * K + 6.0 * T * E * N
    elif mc.get("type") == "retnet":
        dv = mc["retnet"]["value_factor"] * d
        per_layer = 4.0 * T * d * d + 6.0 * T * d * dv + 4.0 * T * d * hidden + 2.0 * T * T * (d + dv)
    else:
        if mc["attention"]["type"] == "linear":      # transformer.c's nominal count
            mix = 2.0 * T * d * (d // mc["n_heads"]) * 2 + 2.0 * T * d
        else:
            mix = 2.0 * T * T * d * 2
        per_layer = 2.0 * T * d * d * 4 + mix + 2.0 * T * d * hidden * 2
    return per_layer * mc["n_layers"] + 2.0 * T * d * n_classes


# ---- parity ---------------------------------------------------------------------------

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
    results = torch_results(load_model(model_path, tokens.shape[1]), tokens, targets)
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

def bench_model_config(n_layers, n_heads, d, score, causal, positional, attention="softmax"):
    """A full "model" config section as bench.c makes it (cfg_defaults + changes)."""
    return {"d_model": d, "n_layers": n_layers, "n_heads": n_heads, "mlp_ratio": 4,
            "activation": "gelu_tanh", "positional": positional, "embed_layernorm": False,
            "dropout": 0.0, "ln_eps": 1e-5,
            "attention": {"type": attention, "score": score, "beta": 0.1, "causal": causal,
                          "feature": "elu1", "eps": 1e-6}}


def bench_retnet_config(n_layers, n_heads, d):
    mc = bench_model_config(n_layers, n_heads, d, "dot", True, "none")
    mc.update({"type": "retnet", "retnet": {"value_factor": 1}})
    return mc


def bench_mamba_config(n_layers, d):
    mc = bench_model_config(n_layers, 1, d, "dot", True, "none")
    mc.update({"type": "mamba", "mamba": {"d_state": 16, "expand": 2, "d_conv": 4, "dt_rank": 0}})
    return mc


# name, model config, vocab, classes, T, batch, steps per round — as in src/bench/bench.c
BENCH_MODELS = [
    ("match2", bench_model_config(1, 1, 64, "unit_norm", False, "none"), 37, 2, 32, 32, 100),
    ("causal", bench_model_config(2, 4, 128, "dot", True, "learned"), 16, 16, 100, 32, 10),
    ("retnet", bench_retnet_config(2, 4, 256), 16, 16, 100, 32, 5),
    ("mamba", bench_mamba_config(2, 256), 16, 16, 100, 32, 5),
    ("linear", bench_model_config(3, 4, 128, "dot", True, "sinusoidal", "linear"), 16, 16, 96, 32, 10),
]
WARMUP_STEPS = 3


class BenchCase:
    """One bench model with its optimizer and a fixed random batch."""

    def __init__(self, name, mc, vocab, n_classes, T, batch, steps):
        self.name, self.steps = name, steps
        self.model = MODELS[mc.get("type", "transformer")](mc, vocab, n_classes, T)
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
