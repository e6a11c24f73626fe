#!/usr/bin/python3
"""attnlab_torch.py — an attnlab run folder as a PyTorch model.

The module below is the transformer of src/nn/transformer.c, op for op:

    x = tok_emb[tokens] [+ positions] [-> LayerNorm ln_emb] [-> dropout]
    per block:  x += dropout(attn(ln1(x)));  x += dropout(mlp(ln2(x)))
    logits = head(ln_f(x))

with H heads of width d/H and one of the three attention mechanisms:

    softmax  scores q·kᵀ/√(d/H) ("dot") or β·q̂·k̂ᵀ with q̂ = q/max(‖q‖, 1e-12)
             ("unit_norm"), an optional causal mask;
    linear   weights φ(q_i)·φ(k_j) / (Σ_j φ(q_i)·φ(k_j) + eps) over the visible keys,
             φ = elu + 1, identity or relu (paper 004 eq. 8; the same values as the
             C op's running sums);
    sparse   softmax over query i's visible keys j ≤ i with i − j < k_local·block or
             j mod block ≥ block − c (paper 004 eq. 6), always causal;

and a d → ratio·d → d GELU MLP (tanh or erf).  Its parameter names are those of
attnlab's model.safetensors, so a checkpoint loads with load_state_dict(strict=True).
DSS runs (model.type "dss") load as DSSModel, RetNet runs (model.type "retnet") as
RetNet and Mamba runs (model.type "mamba") as Mamba (below).  LSTM runs and
ANNA-distilled attention are not modelled here.

Use it from Python (standard library, numpy and torch: Debian's python3-numpy and
python3-torch, no pip):

    import sys; sys.path.insert(0, "python")
    import attnlab_torch as at
    model, config = at.load_run("results/paper000_fig1b/beta10")    # float64, eval mode
    logits, maps = model(tokens, return_attention=True)             # tokens (B, T) int64
    # logits (B, T, n_classes); maps[l] (B, H, T, T): row i = query i's weights over the keys

or from the shell, to check the maps `./train inspect` wrote (exit 0 when every
map agrees to 1e-5, 1 otherwise):

    python3 python/attnlab_torch.py maps RUN_DIR RUN_DIR/inspect/attention.safetensors

bench/torch_reference.py (parity tests and the PyTorch benchmark) imports this module.
"""
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

UNIT_NORM_EPS = 1e-12       # ad_l2norm's eps in transformer.c
MAPS_TOL = 1e-5             # `maps`: max |C − torch| per attention weight


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


def sparse_block(a, max_len):
    """Sparse attention's block B: the config's, or 2^⌊log2 √L⌋ (docs/design.md, decision 7)."""
    if a.get("block", 0):
        return a["block"]
    if max_len is None:
        raise ValueError("attnlab_torch: sparse attention with block 0 (auto) needs max_len "
                         "(the run's longest row)")
    b = 1
    while 4 * b * b <= max_len:
        b *= 2
    return b


def visible_mask(a, T, block, dtype):
    """(T, T) bool: query i sees key j (None: all)."""
    i = torch.arange(T).view(T, 1)
    j = torch.arange(T).view(1, T)
    if a["type"] == "sparse":
        local = (i - j) < a.get("local_blocks", 1) * block
        summary = (j % block) >= block - a.get("summary", 1)
        return (j <= i) & (local | summary)
    return (j <= i) if a["causal"] else None


FEATURES = {"elu1": lambda x: F.elu(x) + 1, "identity": lambda x: x, "relu": F.relu}


class Attention(nn.Module):
    def __init__(self, mc, max_len=None):
        super().__init__()
        d, a = mc["d_model"], mc["attention"]
        self.a = a
        self.n_heads = mc["n_heads"]
        self.unit_norm = a.get("score") == "unit_norm"   # never given for linear attention
        self.scale = f32(a["beta"] if self.unit_norm else 1.0 / math.sqrt(d // self.n_heads))
        self.block = sparse_block(a, max_len) if a["type"] == "sparse" else 0
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

    def weights(self, q, k):
        """q, k (B, H, T, Dh) → (B, H, T, T) effective attention weights."""
        T = q.shape[2]
        mask = visible_mask(self.a, T, self.block, q.dtype)
        if self.a["type"] == "linear":
            phi = FEATURES[self.a.get("feature", "elu1")]
            s = phi(q) @ phi(k).transpose(-2, -1)
            if mask is not None:
                s = s.masked_fill(~mask, 0.0)
            return s / (s.sum(-1, keepdim=True) + f32(self.a.get("eps", 1e-6)))
        if self.unit_norm:
            q = F.normalize(q, dim=-1, eps=UNIT_NORM_EPS)
            k = F.normalize(k, dim=-1, eps=UNIT_NORM_EPS)
        s = self.scale * (q @ k.transpose(-2, -1))
        if mask is not None:
            s = s.masked_fill(~mask, -math.inf)
        return torch.nan_to_num(torch.softmax(s, dim=-1))   # a row seeing nothing: 0

    def forward(self, h):
        B, T, d = h.shape

        def heads(x):                           # (B, T, d) → (B, H, T, d/H)
            return x.view(B, T, self.n_heads, d // self.n_heads).transpose(1, 2)

        w = self.weights(heads(self.q(h)), heads(self.k(h)))
        y = w @ heads(self.v(h))
        return self.o(y.transpose(1, 2).reshape(B, T, d)), w


class Mlp(nn.Module):
    def __init__(self, mc):
        super().__init__()
        d, hidden = mc["d_model"], mc["mlp_ratio"] * mc["d_model"]
        self.approximate = {"gelu_tanh": "tanh", "gelu_erf": "none"}[mc["activation"]]
        self.fc1, self.fc2 = nn.Linear(d, hidden), nn.Linear(hidden, d)

    def forward(self, h):
        return self.fc2(F.gelu(self.fc1(h), approximate=self.approximate))


class Block(nn.Module):
    def __init__(self, mc, max_len=None):
        super().__init__()
        d, eps = mc["d_model"], f32(mc["ln_eps"])
        self.ln1, self.attn = nn.LayerNorm(d, eps=eps), Attention(mc, max_len)
        self.ln2, self.mlp = nn.LayerNorm(d, eps=eps), Mlp(mc)
        self.drop = nn.Dropout(mc["dropout"])

    def forward(self, x):
        y, w = self.attn(self.ln1(x))
        x = x + self.drop(y)
        return x + self.drop(self.mlp(self.ln2(x))), w


# Each key's accepted values, the default (when the config omits the key) first.
SUPPORTED = {"type": ("transformer",), "attention.type": ("softmax", "linear", "sparse"),
             "attention.score": ("dot", "unit_norm"), "positional": ("none", "learned", "sinusoidal"),
             "activation": ("gelu_tanh", "gelu_erf")}


def check_supported(mc):
    """Refuses a config this module would not reproduce exactly."""
    for key, known in SUPPORTED.items():
        section = mc["attention"] if key.startswith("attention.") else mc
        value = section.get(key.split(".")[-1], known[0])   # keys of other mechanisms are absent
        if value not in known:
            raise ValueError(f"attnlab_torch: model.{key} = '{value}' is not implemented here")


class Transformer(nn.Module):
    """mc: the "model" section of an attnlab config (every key present).  max_len is
    needed only for sparse attention with block 0 ("auto")."""

    def __init__(self, mc, vocab_size, n_classes, max_len=None):
        super().__init__()
        check_supported(mc)
        d = mc["d_model"]
        self.d = d
        self.positional = mc["positional"]
        self.tok_emb = nn.Embedding(vocab_size, d)
        if self.positional == "learned":
            self.pos_emb = nn.Embedding(max_len, d)
        self.ln_emb = nn.LayerNorm(d, eps=f32(mc["ln_eps"])) if mc["embed_layernorm"] else None
        self.drop = nn.Dropout(mc["dropout"])
        self.blocks = nn.ModuleList(Block(mc, max_len) for _ in range(mc["n_layers"]))
        self.ln_f = nn.LayerNorm(d, eps=f32(mc["ln_eps"]))
        self.head = nn.Linear(d, n_classes)

    def embed(self, tokens):
        T = tokens.shape[1]
        x = self.tok_emb(tokens)
        if self.positional == "learned":
            x = x + self.pos_emb.weight[:T]
        elif self.positional == "sinusoidal":
            x = x + sinusoid_table(T, self.d).to(x.dtype)
        if self.ln_emb is not None:
            x = self.ln_emb(x)
        return self.drop(x)

    def forward(self, tokens, return_attention=False):
        """tokens (B, T) int64 → logits (B, T, n_classes); with return_attention also
        the list of every layer's weights (B, H, T, T)."""
        x = self.embed(tokens)
        maps = []
        for block in self.blocks:
            x, w = block(x)
            maps.append(w)
        logits = self.head(self.ln_f(x))
        return (logits, maps) if return_attention else logits


# ---- DSS (model.type "dss") ----------------------------------------------------------
# Gupta, Gu & Berant 2022, "Diagonal State Spaces are as Effective as Structured State
# Spaces", §3.3 DSS-softmax, written from the paper's equations and its code's
# DSSKernel (version "softmax", sep_dt_re_im): per channel c and mode n
#     ΔΛ = Δ_re·Re Λ + i·Δ_im·Im Λ,  P[c,n,k] = ΔΛ[c,n]·k  (k = 0 … L−1)
#     K[c,l] = Re Σ_n W[c,n] · Λ_n⁻¹ · softmax_k(P[c,n,:])[l]
# with the softmax's 1/Σ_k e^{P} as the code's num/den and its ε-regularised
# reciprocal, L the model's longest sequence (src/nn/dss.c); with model.dss.channels = C
# the code's `channels`: W (C, d, N), D (C, d), C kernels per channel sharing its Δ, and
# the convolution's (C, d) outputs flattened as '(c h)' for output_linear (C·d → d);
# then per block, pre-norm:
#     x += output_linear(dropout(GELU(K * LN(x) + D ⊙ LN(x))))
# (with model.dss.postact "glu", the code's postact option: output_linear d → 2d, then
# nn.GLU(dim=-1), a·σ(b) over its two halves)
# and with model.dss.ff = k > 0 a feed-forward block after each (the reference code's
# layer list [dss, ff]):  x += dropout(fc2(GELU(fc1(LN(x))))), fc1 d → k·d.
# The kernel in complex128; the convolution as a plain loop over lags.

DSS_EPS = 1e-7      # the reference code's reciprocal() epsilon


class DSSKernel(nn.Module):
    def __init__(self, d, n_state, channels):
        super().__init__()
        self.log_dt = nn.Parameter(torch.zeros(d, 2))
        self.Lambda = nn.Parameter(torch.zeros(n_state, 2))
        self.W = nn.Parameter(torch.zeros(channels, d, n_state, 2))

    def forward(self, T, L):
        """(C, d, T): the first T positions of the kernels normalised over L."""
        lam = torch.complex(self.Lambda[:, 0], self.Lambda[:, 1]).to(torch.complex128)        # (N)
        dt = self.log_dt.exp().to(torch.float64)                                             # (d, 2)
        dtlam = torch.complex(dt[:, :1] * lam.real, dt[:, 1:] * lam.imag)                    # (d, N)
        w = torch.complex(self.W[..., 0], self.W[..., 1]).to(torch.complex128)             # (C, d, N)
        pos = lam.real > 0                       # growing modes: shift by the largest exponent
        k = torch.arange(T, dtype=torch.float64)
        P = dtlam.unsqueeze(-1) * k                                                          # (d, N, T)
        # (the reference code takes this shift under no_grad; its normaliser is the closed
        # form, not a sum over the shifted exponentials, so that drops a term from the
        # gradient of growing modes: here, as in the C op, the exact gradient)
        P = P - (dtlam * (pos * (L - 1))).unsqueeze(-1)
        neg = dtlam * (1 - 2 * pos.to(torch.float64))
        x = (torch.exp(neg * L) - 1) * lam                                                   # den·Λ
        recip = x.conj() / (x * x.conj() + DSS_EPS)
        coef = w * (torch.exp(neg) - 1) * recip
        return torch.einsum("cdn,dnt->cdt", coef, P.exp()).real


class DSSLayer(nn.Module):
    def __init__(self, d, n_state, postact, channels):
        super().__init__()
        self.D = nn.Parameter(torch.zeros(channels, d))
        self.kernel = DSSKernel(d, n_state, channels)
        self.glu = postact == "glu"
        self.output_linear = nn.Linear(channels * d, 2 * d if self.glu else d)

    def forward(self, u, L, drop):
        """u (B, T, d) → (B, T, d)."""
        B, T, d = u.shape
        K = self.kernel(T, L).to(u.dtype)                                                   # (C, d, T)
        uc = u.unsqueeze(2)                                                                 # (B, T, 1, d)
        y = uc * self.D                                                                     # (B, T, C, d)
        for s in range(T):                       # y[t] += K[s]·u[t − s]
            y = y + F.pad(uc[:, :T - s] * K[..., s], (0, 0, 0, 0, s, 0))
        y = self.output_linear(drop(F.gelu(y.reshape(B, T, -1))))                          # '(c h)'
        return F.glu(y, dim=-1) if self.glu else y


class DSSBlock(nn.Module):
    def __init__(self, mc):
        super().__init__()
        d = mc["d_model"]
        self.norm = nn.LayerNorm(d, eps=f32(mc["ln_eps"]))
        self.layer = DSSLayer(d, mc["dss"]["d_state"], mc["dss"].get("postact", "none"), mc["dss"].get("channels", 1))
        k = mc["dss"].get("ff", 0)
        self.ff = DSSFeedForward(d, k, mc["ln_eps"]) if k else None

    def forward(self, x, L, drop):
        x = x + self.layer(self.norm(x), L, drop)
        return x + drop(self.ff(x)) if self.ff is not None else x


class DSSFeedForward(nn.Module):
    def __init__(self, d, k, eps):
        super().__init__()
        self.norm = nn.LayerNorm(d, eps=f32(eps))
        self.fc1 = nn.Linear(d, k * d)
        self.fc2 = nn.Linear(k * d, d)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(self.norm(x))))


class DSSModel(nn.Module):
    """The DSS of src/nn/dss.c; max_len: the C model's longest sequence (the kernel's
    normalising length)."""

    def __init__(self, mc, vocab_size, n_classes, max_len):
        super().__init__()
        if max_len is None:
            raise ValueError("attnlab_torch: a dss model needs max_len (the run's longest row)")
        d, self.max_len = mc["d_model"], max_len
        self.tok_emb = nn.Embedding(vocab_size, d)
        self.drop = nn.Dropout(mc["dropout"])
        self.layers = nn.ModuleList(DSSBlock(mc) for _ in range(mc["n_layers"]))
        self.norm = nn.LayerNorm(d, eps=f32(mc["ln_eps"]))
        self.head = nn.Linear(d, n_classes)

    def forward(self, tokens):
        x = self.drop(self.tok_emb(tokens))
        for block in self.layers:
            x = block(x, self.max_len, self.drop)
        return self.head(self.norm(x))


# ---- RetNet (Sun et al. 2023, "Retentive Network"; src/nn/retnet.c) -----------------
#
# Written from the paper's equations, in the parallel form and independently of the
# C op's arrangement: the rotation as complex multiplication (eq. 5: Q = (XW_Q) ⊙ Θ,
# K = (XW_K) ⊙ Θ̄, Θ_n = e^{inθ}, pairs of coordinates as complex numbers), the decay
# mask D as a T×T matrix, and nn.functional.group_norm for GroupNorm_h.
#   γ_h = 1 − 2^(−5−h)                                   (eq. 8)
#   A = Re(Q̃ K̃^H) / √Dk,  D̃_nm = γ^(n−m) / √(Σ_i D_ni)  (m ≤ n, else 0)   (§2.2)
#   R = A ⊙ D̃,  R̃_nm = R_nm / max(|Σ_i R_ni|, 1),  Retention = R̃ V     (§2.2)
#   MSR(X) = W_O (swish(X W_G) ⊙ GroupNorm_H(Retention))                  (eq. 8)
#   Y = X + MSR(LN(X)),  X' = Y + FFN(LN(Y))                              (eq. 9)

class MultiScaleRetention(nn.Module):
    def __init__(self, mc):
        super().__init__()
        d = mc["d_model"]
        dv = mc.get("retnet", {}).get("value_factor", 1) * d
        self.n_heads, self.eps = mc["n_heads"], f32(mc["ln_eps"])
        self.q_proj, self.k_proj = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
        self.v_proj, self.g_proj = nn.Linear(d, dv, bias=False), nn.Linear(d, dv, bias=False)
        self.out_proj = nn.Linear(dv, d, bias=False)

    def forward(self, x):
        B, T, _ = x.shape
        H = self.n_heads

        def heads(y):                           # (B, T, H·D) → (B, H, T, D)
            return y.view(B, T, H, -1).transpose(1, 2)

        q, k, v = heads(self.q_proj(x)), heads(self.k_proj(x)), heads(self.v_proj(x))
        dk = q.shape[-1]
        half = dk // 2
        theta = 1.0 / 10000 ** torch.linspace(0, 1, half, dtype=torch.float64)
        n = torch.arange(T, dtype=torch.float64)
        rot = torch.polar(torch.ones(T, half, dtype=torch.float64), n[:, None] * theta[None, :])

        def turn(y):                            # pairs as complex numbers, times e^{inθ}
            return torch.view_as_complex(y.reshape(B, H, T, half, 2).contiguous()) * rot

        a = (turn(q) @ turn(k).conj().transpose(-2, -1)).real / math.sqrt(dk)
        gamma = 1.0 - 2.0 ** (-5.0 - torch.arange(H, dtype=torch.float64))
        diff = n[:, None] - n[None, :]
        decay = torch.where(diff >= 0, gamma[:, None, None] ** diff.clamp(min=0), torch.zeros(()))
        decay = decay / decay.sum(-1, keepdim=True).sqrt()
        r = a * decay.to(a.dtype)
        r = r / r.sum(-1, keepdim=True).abs().clamp(min=1.0)
        o = (r.to(v.dtype) @ v).transpose(1, 2).reshape(B * T, -1)   # rotation and decay in float64
        y = F.group_norm(o, H, eps=self.eps).view(B, T, -1)
        return self.out_proj(F.silu(self.g_proj(x)) * y)


class RetNetLayer(nn.Module):
    def __init__(self, mc):
        super().__init__()
        d, eps = mc["d_model"], f32(mc["ln_eps"])
        self.ln1, self.retention = nn.LayerNorm(d, eps=eps), MultiScaleRetention(mc)
        self.ln2, self.ffn = nn.LayerNorm(d, eps=eps), Mlp(mc)
        self.drop = nn.Dropout(mc["dropout"])

    def forward(self, x):
        x = x + self.drop(self.retention(self.ln1(x)))
        return x + self.drop(self.ffn(self.ln2(x)))


class RetNet(nn.Module):
    """mc: the "model" section of a retnet config.  No positional embedding: RetNet
    sees positions through its decays and the rotation of q, k."""

    def __init__(self, mc, vocab_size, n_classes, max_len=None):
        super().__init__()
        d = mc["d_model"]
        self.tok_emb = nn.Embedding(vocab_size, d)
        self.drop = nn.Dropout(mc["dropout"])
        self.retnet = nn.ModuleList(RetNetLayer(mc) for _ in range(mc["n_layers"]))
        self.ln_f = nn.LayerNorm(d, eps=f32(mc["ln_eps"]))
        self.head = nn.Linear(d, n_classes)

    def forward(self, tokens):
        x = self.drop(self.tok_emb(tokens))
        for layer in self.retnet:
            x = layer(x)
        return self.head(self.ln_f(x))


# ---- Mamba (src/nn/mamba.c) -----------------------------------------------------------
# Written from Gu & Dao 2023, "Mamba: Linear-Time Sequence Modeling with Selective State
# Spaces" (§3.4 Figure 3, Algorithm 2) with a naive per-timestep scan, sharing nothing
# with the C op but the equations:
#     x = tok_emb[tokens] -> dropout;  per layer  x += dropout(mixer(RMSNorm(x)))
#     logits = head(RMSNorm_f(x)),  RMSNorm(x) = x / sqrt(mean(x^2) + eps) * weight
# mixer: [x, z] = in_proj(h); x = SiLU(conv1d(x)) (depthwise, causal: padding K-1, the
# first T outputs); [dt, B, C] = x_proj(x); delta = softplus(dt_proj(dt)); A = -exp(A_log);
#     h_t = exp(delta_t A) h_{t-1} + delta_t B_t x_t,  y_t = C_t . h_t + D x_t
# y = y * SiLU(z); out_proj(y).  Parameter names are the reference's (layers.L.mixer.*).

class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def mamba_dims(mc):
    """(d, E, N, K, R) of a model section: expand·d inner channels, d_state, d_conv,
    dt_rank (0 = ceil(d/16)), the C side's defaults when a key is absent."""
    mb = mc.get("mamba", {})
    d = mc["d_model"]
    return (d, mb.get("expand", 2) * d, mb.get("d_state", 16), mb.get("d_conv", 4),
            mb.get("dt_rank", 0) or math.ceil(d / 16))


class MambaMixer(nn.Module):
    def __init__(self, mc):
        super().__init__()
        d, E, N, K, R = self.dims = mamba_dims(mc)
        self.in_proj = nn.Linear(d, 2 * E, bias=False)
        self.conv1d = nn.Conv1d(E, E, K, groups=E, padding=K - 1, bias=True)
        self.x_proj = nn.Linear(E, R + 2 * N, bias=False)
        self.dt_proj = nn.Linear(R, E, bias=True)
        self.A_log = nn.Parameter(torch.zeros(E, N))
        self.D = nn.Parameter(torch.ones(E))
        self.out_proj = nn.Linear(E, d, bias=False)

    def forward(self, hin):
        _, E, N, _, R = self.dims
        Bsz, T, _ = hin.shape
        x, z = self.in_proj(hin).chunk(2, dim=-1)
        x = F.silu(self.conv1d(x.transpose(1, 2))[..., :T].transpose(1, 2))
        dt, Bm, Cm = self.x_proj(x).split([R, N, N], dim=-1)
        delta = F.softplus(self.dt_proj(dt))                  # (B, T, E)
        A = -torch.exp(self.A_log)                            # (E, N)
        h = torch.zeros(Bsz, E, N, dtype=hin.dtype)
        ys = []
        for t in range(T):                                    # the recurrence, step by step
            h = torch.exp(delta[:, t, :, None] * A) * h + delta[:, t, :, None] * Bm[:, t, None, :] * x[:, t, :, None]
            ys.append((h * Cm[:, t, None, :]).sum(-1) + self.D * x[:, t])
        y = torch.stack(ys, dim=1) * F.silu(z)
        return self.out_proj(y)


class MambaBlock(nn.Module):
    def __init__(self, mc):
        super().__init__()
        self.norm = RMSNorm(mc["d_model"], f32(mc["ln_eps"]))
        self.mixer = MambaMixer(mc)


class Mamba(nn.Module):
    """mc: the "model" section of an attnlab config with type "mamba"."""

    def __init__(self, mc, vocab_size, n_classes, max_len=None):
        super().__init__()
        d = mc["d_model"]
        self.tok_emb = nn.Embedding(vocab_size, d)
        self.drop = nn.Dropout(mc["dropout"])
        self.layers = nn.ModuleList(MambaBlock(mc) for _ in range(mc["n_layers"]))
        self.norm_f = RMSNorm(d, f32(mc["ln_eps"]))
        self.head = nn.Linear(d, n_classes)

    def forward(self, tokens, return_attention=False):
        x = self.drop(self.tok_emb(tokens))
        for block in self.layers:
            x = x + self.drop(block.mixer(block.norm(x)))
        logits = self.head(self.norm_f(x))
        return (logits, []) if return_attention else logits


MODELS = {"transformer": Transformer, "dss": DSSModel, "retnet": RetNet, "mamba": Mamba}   # by model.type


def load_model(model_path, max_len=None, config=None):
    """The model (Transformer, DSSModel, RetNet, Mamba: MODELS) of an attnlab model.safetensors (its
    config metadata, or the config dict given), weights loaded, in float64 and eval
    mode (dropout off)."""
    weights, meta = read_safetensors(model_path)
    config = config or json.loads(meta["config"])
    mc = config["model"]
    if "pos_emb.weight" in weights:
        max_len = weights["pos_emb.weight"].shape[0]
    kind = mc.get("type", "transformer")
    if kind not in MODELS:
        raise ValueError(f"attnlab_torch: model.type = '{kind}' is not implemented here")
    model = MODELS[kind](mc, weights["tok_emb.weight"].shape[0], weights["head.weight"].shape[0], max_len)
    model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in weights.items()}, strict=True)
    return model.double().eval()


def load_run(run_dir, max_len=None):
    """(model, config) of a run folder: RUN/model.safetensors with RUN/config.json."""
    with open(os.path.join(run_dir, "config.json")) as f:
        config = json.load(f)
    return load_model(os.path.join(run_dir, "model.safetensors"), max_len, config), config


def loss_fn(logits, targets):
    """Mean cross-entropy over positions whose target is not −1 (ad_cross_entropy)."""
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-1)


# ---- maps: `./train inspect`'s attention.safetensors against this model ---------------

def check_maps(run_dir, maps_path):
    """Recomputes every example's maps of maps_path (exE.tokens, exE.layerL) with the
    run's model; 0 when all agree to MAPS_TOL, else 1."""
    data, meta = read_safetensors(maps_path)
    max_len = int(meta["max_len"]) if "max_len" in meta else None
    model, _ = load_run(run_dir, max_len)
    worst, worst_name, n = 0.0, "", 0
    for name in sorted(k for k in data if k.endswith(".tokens")):
        ex = name[:-len(".tokens")]
        tokens = torch.from_numpy(data[name].astype(np.int64)).view(1, -1)
        with torch.no_grad():
            _, maps = model(tokens, return_attention=True)
        for layer, w in enumerate(maps):
            key = f"{ex}.layer{layer}"
            if key not in data:
                sys.exit(f"maps: {maps_path} has no tensor '{key}'")
            err = float(np.max(np.abs(data[key].astype(np.float64) - w[0].numpy())))
            err = math.inf if math.isnan(err) else err
            n += 1
            if err >= worst:
                worst, worst_name = err, key
    if n == 0:
        sys.exit(f"maps: {maps_path} holds no example (exE.tokens)")
    verdict = "ok" if worst <= MAPS_TOL else "FAILED"
    print(f"maps {verdict}: {n} layer maps, worst {worst_name} max abs err {worst:.3e} "
          f"({'<=' if worst <= MAPS_TOL else '>'} {MAPS_TOL:g})")
    return 0 if worst <= MAPS_TOL else 1


def main(argv):
    if len(argv) != 3 or argv[0] != "maps":
        sys.exit("usage: attnlab_torch.py maps RUN_DIR ATTENTION.safetensors")
    return check_maps(argv[1], argv[2])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
