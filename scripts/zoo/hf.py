"""Hugging Face transformers rows: encoders, decoder-only LLM families, encoder-decoders, vision,
audio and multimodal models, each built from its ``*Config`` with tiny sizes (random weights, nothing
downloaded), returning what the library returns (``ModelOutput``s), with the padding masks they take.
Models whose forward takes keywords (or whose second positional argument is not the mask) are called
through a user's wrapper (``Keywords``), as users gate them."""

from __future__ import annotations

from torch import nn

from zoo.specs import Keywords, Spec, images, seq2seq, tokens

TINY = dict(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
            max_position_embeddings=64)
DECODER = dict(TINY, num_key_value_heads=1, num_attention_heads=4)  # grouped-query attention
SEQ2SEQ = dict(vocab_size=100, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
               decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64,
               pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2)
SPEECH = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, conv_dim=(16, 16),
              conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2)


def hf(model_class: str, config_class: str, keywords: tuple[str, ...] = (), **config):
    """``transformers.<model_class>(transformers.<config_class>(**config))``; wrapped by ``Keywords``
    when ``keywords`` names the inputs."""
    def build() -> nn.Module:
        import transformers

        cfg = getattr(transformers, config_class)(**config)
        cfg.use_cache = False  # what is exported: one forward, no KV cache out
        model = getattr(transformers, model_class)(cfg)
        return Keywords(model, keywords) if keywords else model
    build.__name__ = model_class
    return build


def llm(model_class: str, config_class: str, **config):
    return hf(model_class, config_class, ("input_ids", "attention_mask"), **{**DECODER, **config})


TEXT = tokens()
ENCODERS = [
    Spec("bert", "transformers/encoder", hf("BertModel", "BertConfig", **TINY), TEXT),
    Spec("roberta", "transformers/encoder", hf("RobertaModel", "RobertaConfig", **TINY, pad_token_id=1), TEXT),
    Spec("distilbert", "transformers/encoder", hf("DistilBertModel", "DistilBertConfig", vocab_size=100, dim=32,
                                                  n_layers=2, n_heads=2, hidden_dim=64,
                                                  max_position_embeddings=64), TEXT),
    Spec("albert", "transformers/encoder", hf("AlbertModel", "AlbertConfig", **TINY, embedding_size=16), TEXT),
    Spec("electra", "transformers/encoder", hf("ElectraModel", "ElectraConfig", **TINY, embedding_size=16), TEXT),
    Spec("deberta-v2", "transformers/encoder", hf("DebertaV2Model", "DebertaV2Config", **TINY,
                                                  relative_attention=True, position_buckets=16,
                                                  pos_att_type=["p2c", "c2p"]), TEXT),
]
KW = "wrapper: model(input_ids=, attention_mask=)"
DECODERS = [
    ("gpt2", hf("GPT2LMHeadModel", "GPT2Config", ("input_ids", "attention_mask"), vocab_size=100, n_embd=32,
                n_layer=2, n_head=2, n_inner=64, n_positions=64)),
    ("gpt-neox", llm("GPTNeoXForCausalLM", "GPTNeoXConfig", num_attention_heads=2)),
    ("llama", llm("LlamaForCausalLM", "LlamaConfig")),
    ("mistral", llm("MistralForCausalLM", "MistralConfig", sliding_window=4)),
    ("qwen2", llm("Qwen2ForCausalLM", "Qwen2Config")),
    ("phi", llm("PhiForCausalLM", "PhiConfig", num_attention_heads=2, partial_rotary_factor=0.5)),
    ("gemma", llm("GemmaForCausalLM", "GemmaConfig", head_dim=8)),
    ("falcon", llm("FalconForCausalLM", "FalconConfig", num_attention_heads=2)),
    ("mixtral", llm("MixtralForCausalLM", "MixtralConfig", num_local_experts=4, num_experts_per_tok=2)),
    ("opt", llm("OPTForCausalLM", "OPTConfig", num_attention_heads=2, ffn_dim=64, word_embed_proj_dim=32)),
    ("bloom", hf("BloomForCausalLM", "BloomConfig", ("input_ids", "attention_mask"), vocab_size=100,
                 hidden_size=32, n_layer=2, n_head=2)),
]
S2S_KW = ("input_ids", "attention_mask", "decoder_input_ids")
ENC_DEC = [
    ("t5", hf("T5ForConditionalGeneration", "T5Config", S2S_KW, vocab_size=100, d_model=32, d_kv=16, d_ff=64,
              num_layers=2, num_decoder_layers=2, num_heads=2, decoder_start_token_id=0)),
    ("bart", hf("BartForConditionalGeneration", "BartConfig", S2S_KW, **SEQ2SEQ)),
    ("marian", hf("MarianMTModel", "MarianConfig", S2S_KW, **SEQ2SEQ)),
    ("mbart", hf("MBartForConditionalGeneration", "MBartConfig", S2S_KW, **SEQ2SEQ)),
]
VIT = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, image_size=32,
           patch_size=8)
PIXELS = images((1, 3, 32, 32))
VISION = [
    Spec("hf-vit", "transformers/vision", hf("ViTModel", "ViTConfig", **VIT), PIXELS),
    Spec("deit", "transformers/vision", hf("DeiTModel", "DeiTConfig", **VIT), PIXELS),
    Spec("hf-swin", "transformers/vision", hf("SwinModel", "SwinConfig", image_size=32, patch_size=4, embed_dim=16,
                                              depths=[1, 1], num_heads=[2, 2], window_size=4), PIXELS),
    Spec("hf-convnext", "transformers/vision", hf("ConvNextModel", "ConvNextConfig", num_stages=2, hidden_sizes=[16, 32],
                                                  depths=[1, 1]), PIXELS),
    Spec("segformer", "transformers/vision", hf("SegformerForSemanticSegmentation", "SegformerConfig",
                                                num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1],
                                                hidden_sizes=[16, 32], patch_sizes=[7, 3], strides=[4, 2],
                                                num_attention_heads=[1, 2], mlp_ratios=[2, 2],
                                                decoder_hidden_size=32, num_labels=4), PIXELS),
]
AUDIO = [
    Spec("wav2vec2", "transformers/audio", hf("Wav2Vec2Model", "Wav2Vec2Config", **SPEECH), images((2, 1600))),
    Spec("hubert", "transformers/audio", hf("HubertModel", "HubertConfig", **SPEECH), images((2, 1600))),
    Spec("whisper", "transformers/audio", hf("WhisperForConditionalGeneration", "WhisperConfig",
                                             ("input_features", "decoder_input_ids"), vocab_size=100,
                                             num_mel_bins=16, d_model=32, encoder_layers=2, decoder_layers=2,
                                             encoder_attention_heads=2, decoder_attention_heads=2,
                                             encoder_ffn_dim=64, decoder_ffn_dim=64, max_source_positions=16,
                                             max_target_positions=16, pad_token_id=1, bos_token_id=0,
                                             eos_token_id=2, decoder_start_token_id=0),
         lambda seed: (images((1, 16, 32))(seed)[0], tokens(1, 4, mask=False)(seed)[0]),
         note="wrapper: model(input_features=, decoder_input_ids=)"),
]
TOWER = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
MULTIMODAL = [
    Spec(name, "transformers/multimodal",
         hf(f"{kind}Model", f"{kind}Config", ("input_ids", "pixel_values", "attention_mask"),
            text_config=dict(TOWER, vocab_size=100, max_position_embeddings=16),
            vision_config=dict(TOWER, image_size=32, patch_size=8), **extra),
         lambda seed: (tokens()(seed)[0], images((2, 3, 32, 32))(seed)[0], tokens()(seed)[1]),
         note="wrapper: model(input_ids=, pixel_values=, attention_mask=)")
    for name, kind, extra in (("clip", "CLIP", dict(projection_dim=16)), ("siglip", "Siglip", {}))
]

SPECS = (
    ENCODERS
    + [Spec(n, "transformers/decoder", b, TEXT, note=KW) for n, b in DECODERS]
    + [Spec(n, "transformers/encoder-decoder", b, seq2seq(),
            note="wrapper: model(input_ids=, attention_mask=, decoder_input_ids=)") for n, b in ENC_DEC]
    + VISION + AUDIO + MULTIMODAL
)
SPECS = [Spec(s.name, s.family, s.build, s.inputs, "transformers", s.note) for s in SPECS]
