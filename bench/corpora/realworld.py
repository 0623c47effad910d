"""The real-code corpus: model code nobody here wrote, from packages on the registry.

Each case is a workspace built at run time: the example we write (``example.py``), and for the
"model file in my workspace" situation, a module file copied from the installed package. The
packages are installed from the registry (``bash scripts/setup_python.sh`` installs the
``realworld`` extra); no third-party source is committed here.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Case:
    name: str
    requires: tuple[str, ...]  # import names that must be present
    example: str  # example.py: ours
    copy: dict[str, str] = field(default_factory=dict)  # workspace file <- package file
    what: str = ""


_HF = "import torch\nimport transformers\n\n"

CASES = [
    Case(
        "gpt2-train-step",
        ("transformers",),
        _HF
        + """
def compile_example():
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=100, n_positions=64)
    model = transformers.GPT2LMHeadModel(cfg)
    ids = torch.randint(0, 100, (2, 16))
    return model, (ids,), {"labels": ids}
""",
        what="GPT-2 LM with labels (training mode): the loss path logs through the library",
    ),
    Case(
        "gpt2-seq-lengths",
        ("transformers",),
        _HF
        + """
def compile_example():
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=100, n_positions=64)
    model = transformers.GPT2Model(cfg).eval()
    return [(model, (torch.randint(0, 100, (2, n)),)) for n in (8, 12, 16, 20)]
""",
        what="GPT-2 in eval on four sequence lengths: declared variants",
    ),
    Case(
        "bert-classifier",
        ("transformers",),
        _HF
        + """
def compile_example():
    torch.manual_seed(0)
    cfg = transformers.BertConfig(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        vocab_size=100, num_labels=3,
    )
    model = transformers.BertForSequenceClassification(cfg).eval()
    ids = torch.randint(0, 100, (2, 12))
    return model, (ids,), {"attention_mask": torch.ones(2, 12, dtype=torch.long)}
""",
        what="BERT sequence classification with an attention mask",
    ),
    Case(
        "bert-mask-or-none",
        ("transformers",),
        _HF
        + """
def compile_example():
    torch.manual_seed(0)
    cfg = transformers.BertConfig(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        vocab_size=100,
    )
    model = transformers.BertModel(cfg).eval()
    ids = torch.randint(0, 100, (2, 12))
    mask = torch.ones(2, 12, dtype=torch.long)
    return [
        (model, (ids,), {"attention_mask": mask}),
        (model, (ids,), {"attention_mask": None}),
        (model, (ids,), {"attention_mask": mask}),
    ]
""",
        what="BERT called with and without a mask: None-vs-tensor guards inside the library",
    ),
    Case(
        "llama-tiny",
        ("transformers",),
        _HF
        + """
def compile_example():
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, vocab_size=100, max_position_embeddings=64,
    )
    model = transformers.LlamaForCausalLM(cfg).eval()
    return model, (torch.randint(0, 100, (1, 10)),)
""",
        what="Llama causal LM (rotary embeddings, GQA)",
    ),
    Case(
        "t5-encoder-decoder",
        ("transformers",),
        _HF
        + """
def compile_example():
    torch.manual_seed(0)
    cfg = transformers.T5Config(
        d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4,
        vocab_size=100, decoder_start_token_id=0,
    )
    model = transformers.T5ForConditionalGeneration(cfg).eval()
    ids = torch.randint(0, 100, (2, 10))
    return model, (ids,), {"decoder_input_ids": torch.randint(0, 100, (2, 6))}
""",
        what="T5 encoder-decoder (relative position buckets)",
    ),
    Case(
        "vit-hf",
        ("transformers",),
        _HF
        + """
def compile_example():
    torch.manual_seed(0)
    cfg = transformers.ViTConfig(
        image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, num_labels=5,
    )
    model = transformers.ViTForImageClassification(cfg).eval()
    return model, (torch.randn(2, 3, 32, 32),)
""",
        what="Hugging Face ViT image classification",
    ),
    Case(
        "clip-hf",
        ("transformers",),
        _HF
        + """
def compile_example():
    torch.manual_seed(0)
    text = transformers.CLIPTextConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
        vocab_size=100, max_position_embeddings=16,
    )
    vision = transformers.CLIPVisionConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
        image_size=32, patch_size=8,
    )
    cfg = transformers.CLIPConfig(text_config=text.to_dict(), vision_config=vision.to_dict())
    model = transformers.CLIPModel(cfg).eval()
    ids = torch.randint(0, 100, (2, 8))
    return model, (), {"input_ids": ids, "pixel_values": torch.randn(2, 3, 32, 32)}
""",
        what="CLIP text and vision towers (QuickGELU)",
    ),
    Case(
        "whisper-encoder",
        ("transformers",),
        _HF
        + """
def compile_example():
    torch.manual_seed(0)
    cfg = transformers.WhisperConfig(
        d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, num_mel_bins=16,
        max_source_positions=32, vocab_size=100, pad_token_id=0, bos_token_id=1,
        eos_token_id=2, decoder_start_token_id=1,
    )
    model = transformers.WhisperModel(cfg).eval()
    return model.encoder, (torch.randn(1, 16, 64),)
""",
        what="Whisper's audio encoder (conv front end, sinusoidal positions)",
    ),
    Case(
        "x-transformers-decoder",
        ("x_transformers",),
        """import torch
from x_transformers import Decoder, TransformerWrapper


def compile_example():
    torch.manual_seed(0)
    model = TransformerWrapper(
        num_tokens=100, max_seq_len=64, attn_layers=Decoder(dim=32, depth=2, heads=2)
    ).eval()
    return model, (torch.randint(0, 100, (2, 16)),)
""",
        what="x-transformers decoder-only LM",
    ),
    Case(
        "x-transformers-lengths",
        ("x_transformers",),
        """import torch
from x_transformers import Encoder, TransformerWrapper


def compile_example():
    torch.manual_seed(0)
    model = TransformerWrapper(
        num_tokens=100, max_seq_len=64, attn_layers=Encoder(dim=32, depth=1, heads=2)
    ).eval()
    return [(model, (torch.randint(0, 100, (2, n)),)) for n in (8, 16, 24)]
""",
        what="x-transformers encoder on three lengths: declared variants",
    ),
    Case(
        "local-attention",
        ("local_attention",),
        """import torch
from local_attention import LocalAttention


def compile_example():
    torch.manual_seed(0)
    attn = LocalAttention(window_size=8, causal=True, dim=16).eval()
    q, k, v = (torch.randn(2, 4, 32, 16) for _ in range(3))
    return attn, (q, k, v)
""",
        what="lucidrains' windowed local attention (einops, padding logic)",
    ),
    Case(
        "perceiver-copied",
        ("perceiver_pytorch",),
        """import torch

from perceiver_pytorch import Perceiver


def compile_example():
    torch.manual_seed(0)
    model = Perceiver(
        num_freq_bands=4, depth=1, max_freq=10.0, input_channels=3, input_axis=2,
        num_latents=16, latent_dim=32, cross_dim_head=8, latent_dim_head=8, num_classes=5,
    ).eval()
    return model, (torch.randn(1, 8, 8, 3),)
""",
        copy={"perceiver_pytorch.py": "perceiver_pytorch/perceiver_pytorch.py"},
        what="Perceiver's module file copied into the workspace (model file in my workspace)",
    ),
    Case(
        "vit-pytorch-copied",
        ("einops", "vit_pytorch"),
        """import torch

from vit import ViT


def compile_example():
    torch.manual_seed(0)
    model = ViT(
        image_size=32, patch_size=8, num_classes=5, dim=32, depth=2, heads=2, mlp_dim=64,
    ).eval()
    return model, (torch.randn(2, 3, 32, 32),)
""",
        copy={"vit.py": "vit_pytorch/vit.py"},
        what="vit-pytorch's ViT module file copied into the workspace",
    ),
    Case(
        "mlp-mixer-train",
        ("mlp_mixer_pytorch",),
        """import torch
from mlp_mixer_pytorch import MLPMixer


def compile_example():
    torch.manual_seed(0)
    model = MLPMixer(
        image_size=32, channels=3, patch_size=8, dim=32, depth=2, num_classes=5
    ).train()
    return model, (torch.randn(2, 3, 32, 32),)
""",
        what="MLP-Mixer in training mode (einops layers), probed dims",
    ),
    Case(
        "rotary-embedding",
        ("rotary_embedding_torch",),
        """import torch
from rotary_embedding_torch import RotaryEmbedding


def rotate(rot, q):
    return rot.rotate_queries_or_keys(q)


def compile_example():
    torch.manual_seed(0)
    rot = RotaryEmbedding(dim=16)
    return [(rotate, (rot, torch.randn(1, 2, n, 32))) for n in (8, 16, 24, 32)]
""",
        what="rotary-embedding-torch's cached frequencies over four lengths",
    ),
    Case(
        "torch-transformer-encoder",
        (),
        """import torch
from torch import nn


def compile_example():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=32, nhead=2, dim_feedforward=64, batch_first=True)
    model = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False).eval()
    x = torch.randn(2, 10, 32)
    mask = torch.zeros(2, 10, dtype=torch.bool)
    return model, (x,), {"src_key_padding_mask": mask}
""",
        what="torch's own nn.TransformerEncoder (library code: torch/nn/modules/transformer.py)",
    ),
    Case(
        "gpt2-generate",
        ("transformers",),
        _HF
        + '''
class Generate(torch.nn.Module):
    """Greedy decoding as a serving script would compile it."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model.generate(ids, max_new_tokens=3, do_sample=False, pad_token_id=0)


def compile_example():
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(
        n_layer=1, n_head=2, n_embd=32, vocab_size=100, n_positions=64, bos_token_id=1,
        eos_token_id=2,
    )
    model = transformers.GPT2LMHeadModel(cfg).eval()
    return Generate(model), (torch.randint(3, 100, (1, 5)),)
''',
        what="transformers' generate(): breaks and recompiles all inside the library",
    ),
    Case(
        "einops-permutations",
        ("einops",),
        """import itertools

import torch
from einops import rearrange


def permute(x, pattern):
    return rearrange(x, pattern)


def compile_example():
    x = torch.randn(2, 3, 4, 5)
    patterns = [f"a b c d -> {' '.join(p)}" for p in itertools.permutations("abcd")][:12]
    return [(permute, (x, p)) for p in patterns]
""",
        what="einops with twelve patterns: torch hits the recompile limit inside einops",
    ),
    Case(
        "lstm-packed",
        (),
        """import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 16)
        self.lstm = nn.LSTM(16, 16, batch_first=True)
        self.out = nn.Linear(16, 5)

    def forward(self, ids, lengths):
        x = self.emb(ids)
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        h, _ = self.lstm(packed)
        h, _ = pad_packed_sequence(h, batch_first=True)
        return self.out(h)


def compile_example():
    torch.manual_seed(0)
    return Tagger().eval(), (torch.randint(0, 50, (3, 7)), torch.tensor([7, 5, 2]))
""",
        what="an LSTM tagger over packed sequences (torch.nn.utils.rnn)",
    ),
]
