"""A tiny causal language model, built here: random weights and a byte-level BPE tokenizer trained
on the example corpus. The real vLLM engine loads it like any local model folder; structured
output holds its answers to each schema whatever the weights say. Nothing is downloaded."""

from __future__ import annotations

from pathlib import Path

from tests.support.paths import ROOT

# The chat template the engine's chat stage applies: the messages, then the assistant's turn.
CHAT_TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|>{% endif %}")
SPECIAL = ["<|pad|>", "<|bos|>", "<|eos|>", "<|user|>", "<|system|>", "<|assistant|>"]


def corpus() -> list[str]:
    """What the tokenizer is trained on: the example corpus and the project's prompts."""
    texts = [p.read_text(errors="replace") for p in sorted((ROOT / "examples").rglob("*.md"))]
    return texts + [p.read_text() for p in sorted((ROOT / "pipeline" / "prompts").iterdir())]


def build(folder: Path, corpus: list[str], *, vocab_size: int = 2048, seed: int = 0) -> Path:
    """Save a tiny Llama (2 layers, width 128, heads of 64: the CPU attention kernels take no smaller) and its tokenizer in `folder`; return it."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(corpus, vocab_size=vocab_size, min_frequency=1, special_tokens=SPECIAL)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, pad_token="<|pad|>", bos_token="<|bos|>",
                                        eos_token="<|eos|>")
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(folder)
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=8192,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=True, torch_dtype="float32")
    LlamaForCausalLM(config).save_pretrained(folder)
    return folder
