"""The transformers models GraphMend measured (CGO 2026), built from small configs, as workspace
files with a ``compile_example()``: a training step (labels given, so the loss is computed and
gradients flow). Written into a temporary workspace at bench time; the model code is the
installed transformers package's, never copied here.

Configs are the smallest that keep each architecture's code paths (two layers, four heads,
cache off so outputs hold tensors only); inputs are seeded.
"""

from __future__ import annotations

HEADER = "import torch\nimport transformers\n\n\n"

SEQ2SEQ = """def compile_example():
    torch.manual_seed(0)
    cfg = transformers.{config}(
        vocab_size=100, d_model=32, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
        decoder_ffn_dim=64, max_position_embeddings=64, use_cache=False,
        pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2,
    )
    model = transformers.{model}(cfg)
    ids = torch.randint(3, 100, (2, 12))
    labels = torch.randint(3, 100, (2, 8))
    return model, (), {{"input_ids": ids, "labels": labels}}
"""

DECODER = """def compile_example():
    torch.manual_seed(0)
    cfg = transformers.{config}(
        vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=64, use_cache=False, pad_token_id=1,{extra}
    )
    model = transformers.{model}(cfg)
    ids = torch.randint(3, 100, (2, 12))
    return model, (), {{"input_ids": ids, "labels": ids}}
"""

MODELS: dict[str, str] = {
    # Not in GraphMend's set: the library-logging break (``logger.warning_once``) of a training
    # step, which these transformers and torch still show.
    "gpt2": """def compile_example():
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(
        n_layer=2, n_head=4, n_embd=32, vocab_size=100, n_positions=64, use_cache=False
    )
    model = transformers.GPT2LMHeadModel(cfg)
    ids = torch.randint(0, 100, (2, 12))
    return model, (), {"input_ids": ids, "labels": ids}
""",
    "bart": SEQ2SEQ.format(config="BartConfig", model="BartForConditionalGeneration"),
    "blenderbot": SEQ2SEQ.format(
        config="BlenderbotConfig", model="BlenderbotForConditionalGeneration"
    ),
    "marian": SEQ2SEQ.format(config="MarianConfig", model="MarianMTModel"),
    "pegasus": SEQ2SEQ.format(config="PegasusConfig", model="PegasusForConditionalGeneration"),
    "biogpt": DECODER.format(config="BioGptConfig", model="BioGptForCausalLM", extra=""),
    "phi3": DECODER.format(
        config="Phi3Config", model="Phi3ForCausalLM", extra=" num_key_value_heads=4,"
    ),
    "t5": """def compile_example():
    torch.manual_seed(0)
    cfg = transformers.T5Config(
        vocab_size=100, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2,
        num_heads=4, use_cache=False, decoder_start_token_id=0,
    )
    model = transformers.T5ForConditionalGeneration(cfg)
    ids = torch.randint(1, 100, (2, 12))
    labels = torch.randint(1, 100, (2, 8))
    return model, (), {"input_ids": ids, "labels": labels}
""",
    "whisper": """def compile_example():
    torch.manual_seed(0)
    cfg = transformers.WhisperConfig(
        vocab_size=100, d_model=32, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
        decoder_ffn_dim=64, num_mel_bins=16, max_source_positions=16, max_target_positions=32,
        use_cache=False, pad_token_id=1, bos_token_id=0, eos_token_id=2,
        decoder_start_token_id=0,
    )
    model = transformers.WhisperForConditionalGeneration(cfg)
    features = torch.randn(2, 16, 32)
    labels = torch.randint(3, 100, (2, 8))
    return model, (), {"input_features": features, "labels": labels}
""",
    "longformer": """def compile_example():
    torch.manual_seed(0)
    cfg = transformers.LongformerConfig(
        vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, attention_window=4, max_position_embeddings=80, pad_token_id=1,
    )
    model = transformers.LongformerForMaskedLM(cfg)
    ids = torch.randint(3, 100, (2, 16))
    return model, (), {"input_ids": ids, "labels": ids}
""",
    "layoutlmv3": """def compile_example():
    torch.manual_seed(0)
    cfg = transformers.LayoutLMv3Config(
        vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=64, coordinate_size=6, shape_size=4,
        input_size=32, patch_size=16, num_labels=3,
    )
    model = transformers.LayoutLMv3ForSequenceClassification(cfg)
    ids = torch.randint(3, 100, (2, 8))
    x0 = torch.randint(0, 500, (2, 8, 2))
    bbox = torch.cat([x0, x0 + torch.randint(0, 500, (2, 8, 2))], dim=-1)
    pixels = torch.randn(2, 3, 32, 32)
    labels = torch.tensor([0, 2])
    return model, (), {"input_ids": ids, "bbox": bbox, "pixel_values": pixels, "labels": labels}
""",
    "clap": """def compile_example():
    torch.manual_seed(0)
    text = dict(
        vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=64, projection_dim=16,
    )
    audio = dict(
        spec_size=64, num_mel_bins=16, patch_size=4, patch_stride=(4, 4), hidden_size=32,
        depths=[1, 1], num_attention_heads=[2, 4], window_size=4, patch_embeds_hidden_size=16,
        projection_dim=16, enable_fusion=False,
    )
    cfg = transformers.ClapConfig(text_config=text, audio_config=audio, projection_dim=16)
    model = transformers.ClapModel(cfg)
    ids = torch.randint(3, 100, (2, 8))
    features = torch.randn(2, 1, 64, 16)
    return model, (), {"input_ids": ids, "input_features": features, "return_loss": True}
""",
}


def sources() -> dict[str, str]:
    """``{file name: source}`` for every model."""
    return {f"hf_{name}.py": HEADER + body for name, body in MODELS.items()}
