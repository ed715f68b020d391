"""The default model in PyTorch: a decoder-only Mixture-of-Experts in Hugging Face's Mixtral layout.

Written from transformers' modeling_mixtral.py (read, not copied; transformers is not installed
here): pre-norm RMSNorm (x * rsqrt(mean(x^2) + eps) * w), rotary embeddings in the rotate_half
layout (cos/sin of position * theta^(-2i/head_dim), the two halves concatenated), grouped-query
attention with causal softmax, and MixtralSparseMoeBlock: router logits = gate(x), softmax over
all experts in float32, top-k, the k weights divided by their sum, expert e computes
w2(silu(w1 x) * w3 x). Parameter names are chosen so that hf_state_dict() gives HF's exact tensor
names (model.layers.L.block_sparse_moe.experts.E.w1.weight, ...).

Losses besides cross-entropy (returned by forward):
  * load balancing: transformers' load_balancing_loss_func for one layer,
    E * sum_e (share of the N*k routing slots that go to e, times k) * (mean router prob of e);
    it is k for perfectly uniform routing (Switch Transformer eq. 4, generalised to top-k);
  * router z-loss: mean over tokens of logsumexp(router logits)^2 (ST-MoE, Zoph et al. 2022).
"""
import math
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ModelArgs:
    vocab_size: int = 4096
    d_model: int = 192
    n_layers: int = 6
    n_heads: int = 6
    n_kv_heads: int = 2
    n_experts: int = 16
    top_k: int = 2
    ffn: int = 192
    max_seq: int = 256
    rope_theta: float = 10000.0
    rms_eps: float = 1e-5

    @property
    def head_dim(self):
        return self.d_model // self.n_heads

    def to_dict(self):
        return asdict(self)


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(n, head_dim, theta):
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    ang = torch.outer(torch.arange(n, dtype=torch.float64), inv)
    emb = torch.cat([ang, ang], dim=-1)
    return emb.cos().float(), emb.sin().float()


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


class Attention(nn.Module):
    def __init__(self, a: ModelArgs):
        super().__init__()
        self.nh, self.nkv, self.hd = a.n_heads, a.n_kv_heads, a.head_dim
        self.q_proj = nn.Linear(a.d_model, self.nh * self.hd, bias=False)
        self.k_proj = nn.Linear(a.d_model, self.nkv * self.hd, bias=False)
        self.v_proj = nn.Linear(a.d_model, self.nkv * self.hd, bias=False)
        self.o_proj = nn.Linear(self.nh * self.hd, a.d_model, bias=False)

    def forward(self, x, cos, sin, mask):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.nh, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.nkv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.nkv, self.hd).transpose(1, 2)
        c, s = cos[:T], sin[:T]
        q = q * c + rotate_half(q) * s
        k = k * c + rotate_half(k) * s
        if self.nkv != self.nh:
            rep = self.nh // self.nkv
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
        att = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(self.hd))
        att = att.masked_fill(mask[:T, :T], float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, self.nh * self.hd)
        return self.o_proj(y)


class SparseMoE(nn.Module):
    """MixtralSparseMoeBlock. Experts are stored stacked ([E, ffn, d] etc.) for speed and split
    into HF's per-expert tensors by hf_state_dict()."""

    def __init__(self, a: ModelArgs):
        super().__init__()
        self.E, self.k = a.n_experts, a.top_k
        self.gate = nn.Linear(a.d_model, a.n_experts, bias=False)
        self.w1 = nn.Parameter(torch.empty(a.n_experts, a.ffn, a.d_model))
        self.w3 = nn.Parameter(torch.empty(a.n_experts, a.ffn, a.d_model))
        self.w2 = nn.Parameter(torch.empty(a.n_experts, a.d_model, a.ffn))
        self.last_topk = None  # [N, k] expert ids of the last forward (routing statistics)

    def forward(self, x):
        B, T, D = x.shape
        xf = x.reshape(-1, D)
        logits = self.gate(xf).float()                       # [N, E]
        probs = logits.softmax(-1)
        topw, topi = probs.topk(self.k, dim=-1)              # [N, k]
        topw = topw / topw.sum(-1, keepdim=True)
        self.last_topk = topi.detach()
        flat = topi.reshape(-1)
        counts = torch.bincount(flat, minlength=self.E)
        aux = self.E * ((counts.float() / xf.shape[0]) * probs.mean(0)).sum()
        zloss = torch.logsumexp(logits, -1).pow(2).mean()
        order = flat.argsort(stable=True)
        tok = order // self.k
        w = topw.reshape(-1)[order].unsqueeze(-1).to(x.dtype)
        xs = xf.index_select(0, tok)
        outs, start = [], 0
        for e, n in enumerate(counts.tolist()):
            if n == 0:
                continue
            xe = xs[start:start + n]
            h = F.silu(xe @ self.w1[e].t()) * (xe @ self.w3[e].t())
            outs.append(h @ self.w2[e].t())
            start += n
        ys = torch.cat(outs, 0) * w
        out = torch.zeros_like(xf).index_add_(0, tok, ys)
        return out.view(B, T, D), aux, zloss


class DecoderLayer(nn.Module):
    def __init__(self, a: ModelArgs):
        super().__init__()
        self.input_layernorm = RMSNorm(a.d_model, a.rms_eps)
        self.self_attn = Attention(a)
        self.post_attention_layernorm = RMSNorm(a.d_model, a.rms_eps)
        self.block_sparse_moe = SparseMoE(a)

    def forward(self, x, cos, sin, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        m, aux, z = self.block_sparse_moe(self.post_attention_layernorm(x))
        return x + m, aux, z


class MoEModel(nn.Module):
    def __init__(self, a: ModelArgs):
        super().__init__()
        self.args = a
        self.embed_tokens = nn.Embedding(a.vocab_size, a.d_model)
        self.layers = nn.ModuleList([DecoderLayer(a) for _ in range(a.n_layers)])
        self.norm = RMSNorm(a.d_model, a.rms_eps)
        self.lm_head = nn.Linear(a.d_model, a.vocab_size, bias=False)
        cos, sin = rope_tables(a.max_seq, a.head_dim, a.rope_theta)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        self.register_buffer("mask", torch.triu(torch.ones(a.max_seq, a.max_seq,
                                                           dtype=torch.bool), 1),
                             persistent=False)

    def init_weights(self, generator):
        """GPT-2 style: N(0, 0.02), residual output projections scaled by 1/sqrt(2 L)."""
        std = 0.02
        out_std = std / math.sqrt(2 * self.args.n_layers)
        for name, p in self.named_parameters():
            if p.dim() < 2:
                continue
            s = out_std if name.endswith(("o_proj.weight", ".w2")) else std
            with torch.no_grad():
                p.copy_(torch.randn(p.shape, generator=generator) * s)

    def forward(self, idx):
        """idx [B, T] -> logits [B, T, V] (float32), mean aux loss, mean z-loss over layers."""
        x = self.embed_tokens(idx)
        aux = z = 0.0
        for layer in self.layers:
            x, a, zz = layer(x, self.cos, self.sin, self.mask)
            aux, z = aux + a, z + zz
        n = len(self.layers)
        return self.lm_head(self.norm(x)), aux / n, z / n

    def count_params(self):
        a = self.args
        total = sum(p.numel() for p in self.parameters())
        expert = a.n_layers * a.n_experts * 3 * a.d_model * a.ffn
        active = total - expert + a.n_layers * a.top_k * 3 * a.d_model * a.ffn
        return total, active


def hf_state_dict(model: MoEModel):
    """HF Mixtral tensor names -> tensors (views of the model's parameters)."""
    sd = {"model.embed_tokens.weight": model.embed_tokens.weight,
          "model.norm.weight": model.norm.weight, "lm_head.weight": model.lm_head.weight}
    for i, layer in enumerate(model.layers):
        p = f"model.layers.{i}."
        sd[p + "input_layernorm.weight"] = layer.input_layernorm.weight
        sd[p + "post_attention_layernorm.weight"] = layer.post_attention_layernorm.weight
        for nm in ("q_proj", "k_proj", "v_proj", "o_proj"):
            sd[p + f"self_attn.{nm}.weight"] = getattr(layer.self_attn, nm).weight
        m = layer.block_sparse_moe
        sd[p + "block_sparse_moe.gate.weight"] = m.gate.weight
        for e in range(m.E):
            sd[p + f"block_sparse_moe.experts.{e}.w1.weight"] = m.w1[e]
            sd[p + f"block_sparse_moe.experts.{e}.w2.weight"] = m.w2[e]
            sd[p + f"block_sparse_moe.experts.{e}.w3.weight"] = m.w3[e]
    return sd


def load_hf_state_dict(model: MoEModel, sd):
    with torch.no_grad():
        for name, t in hf_state_dict(model).items():
            if name not in sd:
                raise KeyError(f"tensor {name} missing")
            t.copy_(sd[name].to(t.dtype).view(t.shape))
