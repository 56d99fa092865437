"""Make tiny random-weight GGUF models that embed real chat templates, for llama-server.

Run by ``build_llama_server.sh`` with llama.cpp's own ``gguf-py`` on ``PYTHONPATH``:

    python make_models.py --templates <tree>/models/templates --out <cache>/models

Each model is a one-layer llama with random weights: what it generates is noise, but llama-server
renders the embedded chat template exactly as it would for the real model, so ``prompt_tokens``
measures what the template keeps of a request (the signal the replay eval reads), and grammar-
constrained output (``tool_choice: required``) is well formed whatever the weights say.

The weights make a bigram model, so that a forced call terminates: the attention and MLP write
nothing back (``attn_output`` and ``ffn_down`` are zero), each token's embedding is one-hot, so
the output matrix scores the next token from the current one alone. Everywhere: end-of-generation
first, then the JSON punctuation that closes a structure, noise, and whitespace last; after a
template's own transitions (Qwen3: a newline opens ``<tool_call>``, which a newline follows), the
template's tool-call opener. Wherever the grammar allows it the model stops; where a tool call is
required it opens one at once, fills it in as the grammar dictates (enum arguments are bounded)
and stops after it.

The tokenizer is byte-level BPE over the 256 byte symbols (every text tokenizes, one token per
byte) plus the template's own special tokens (``<|im_start|>``, ``<think>``, ...) as single
tokens, so a template that emits them renders and counts them as the real model would.
``models.json`` beside the models lists each name, file, template and the template's sha256.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

try:
    import gguf
except ImportError as exc:  # the build script puts the tree's gguf-py on PYTHONPATH
    raise SystemExit(f"error: cannot import gguf ({exc}); run this through build_llama_server.sh") from exc


@dataclass(frozen=True)
class TemplateModel:
    """One model to make: its name, the template file, and the special tokens the template names."""

    name: str
    template: str
    bos: str
    eos: str
    # (current token, next token, score): what this template's tool-call syntax needs next
    transitions: tuple[tuple[str, str, float], ...] = ()


# The families the replay presets cover; each template is the tree's copy of the real model's.
MODELS: tuple[TemplateModel, ...] = (
    TemplateModel("qwen3", "Qwen-Qwen3-0.6B.jinja", "<|endoftext|>", "<|im_end|>",
                  (("\n", "<tool_call>", 9.0), ("\n", "{", 8.0), ("<tool_call>", "\n", 9.0))),
    TemplateModel("glm-4.6", "GLM-4.6.jinja", "[gMASK]", "<|endoftext|>"),
    TemplateModel("glm-4.7-flash", "GLM-4.7-Flash.jinja", "[gMASK]", "<|endoftext|>"),
    TemplateModel("kimi-k2-thinking", "Kimi-K2-Thinking.jinja", "[BOS]", "<|im_end|>"),
    TemplateModel("kimi-k2", "moonshotai-Kimi-K2.jinja", "[BOS]", "<|im_end|>"),
    TemplateModel("seed-oss", "ByteDance-Seed-OSS.jinja", "<seed:bos>", "<seed:eos>"),
    TemplateModel(
        "deepseek-r1-distill",
        "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
        "<｜begin▁of▁sentence｜>",
        "<｜end▁of▁sentence｜>",
    ),
    # the generation prompt ends in an open <think>: one reasoning token, then close it and stop,
    # so llama-server has reasoning_content to return
    TemplateModel("deepseek-v4", "deepseek-ai-DeepSeek-V4.jinja", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>",
                  (("<think>", "R", 11.0), ("R", "</think>", 11.0))),
)

# Special-token spellings the templates use: <|x|>, <｜x｜> (DeepSeek), <think>, <seed:think>, [gMASK]
_SPECIAL = re.compile(r"<[|｜]?/?[A-Za-z][A-Za-z0-9_:▁.|｜-]{0,40}>|\[gMASK\]")

N_EMBD = 512  # at least the vocabulary: embeddings are one-hot
N_HEAD = 4
N_FF = 128
N_CTX = 8192


def byte_symbols() -> list[str]:
    """GPT-2's byte-to-unicode table: the 256 printable symbols byte-level BPE spells bytes with."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    printable += list(range(ord("®"), ord("ÿ") + 1))
    codes = printable[:]
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            codes.append(256 + extra)
            extra += 1
    table = dict(zip(printable, codes))
    return [chr(table[byte]) for byte in range(256)]


def special_tokens(model: TemplateModel, source: str) -> list[str]:
    """The template's special tokens, its bos/eos first, in a stable order."""
    found = sorted(set(_SPECIAL.findall(source)) - {model.bos, model.eos})
    return [model.bos, model.eos, *found]


def write_model(model: TemplateModel, templates: Path, out: Path, seed: int) -> dict[str, str]:
    """Write ``<out>/<name>.gguf`` and return its manifest entry."""
    path = templates / model.template
    source = path.read_text(encoding="utf-8")
    symbols = byte_symbols()
    specials = special_tokens(model, source)
    tokens = symbols + specials
    types = [gguf.TokenType.NORMAL] * len(symbols) + [gguf.TokenType.CONTROL] * 2
    types += [gguf.TokenType.USER_DEFINED] * (len(specials) - 2)
    vocab = len(tokens)
    rng = np.random.default_rng(seed)

    def piece(text: str) -> int:
        """The token of a special token, or of a one-byte ASCII text (token id = the byte)."""
        return tokens.index(text, len(symbols)) if text in specials else ord(text)

    target = out / f"{model.name}.gguf"
    partial = target.with_suffix(".gguf.partial")
    writer = gguf.GGUFWriter(str(partial), "llama")
    writer.add_name(f"capplan-realpeer-{model.name}")
    writer.add_context_length(N_CTX)
    writer.add_embedding_length(N_EMBD)
    writer.add_block_count(1)
    writer.add_feed_forward_length(N_FF)
    writer.add_head_count(N_HEAD)
    writer.add_head_count_kv(N_HEAD)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(N_EMBD // N_HEAD)
    writer.add_vocab_size(vocab)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    # one merge keeps the BPE loader content; every byte is a token of its own anyway
    writer.add_token_merges([f"{symbols[ord('a')]} {symbols[ord('b')]}"])
    writer.add_bos_token_id(len(symbols))
    writer.add_eos_token_id(len(symbols) + 1)
    writer.add_add_bos_token(False)
    writer.add_add_eos_token(False)
    writer.add_chat_template(source)

    def weight(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    if vocab > N_EMBD:
        raise SystemExit(f"error: {model.name}: {vocab} tokens do not fit one-hot in {N_EMBD} dimensions")
    embd = np.zeros((vocab, N_EMBD), dtype=np.float32)
    embd[np.arange(vocab), np.arange(vocab)] = 1.0
    scores = (rng.standard_normal((vocab, vocab)) * 0.01).astype(np.float32)  # [next, current]
    for char, score in (('"', 6.0), (":", 5.0), (",", 4.0), ("}", 3.5), (" ", -1.0), ("\n", -1.0), ("\t", -1.0)):
        scores[piece(char), :] = score
    for special, score in (("</tool_call>", 3.0),):
        if special in specials:
            scores[piece(special), :] = score
    scores[len(symbols) + 1, :] = 10.0  # eos: stop wherever the grammar lets it
    for current, following, score in model.transitions:
        scores[piece(following), piece(current)] = score
    output = np.zeros((vocab, N_EMBD), dtype=np.float32)
    # after the final norm a one-hot row is sqrt(N_EMBD) at its token: scale the scores back
    output[:, :vocab] = scores / np.sqrt(N_EMBD)
    writer.add_tensor("token_embd.weight", embd)
    writer.add_tensor("output_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    writer.add_tensor("output.weight", output)
    writer.add_tensor("blk.0.attn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    for name in ("attn_q", "attn_k", "attn_v"):
        writer.add_tensor(f"blk.0.{name}.weight", weight(N_EMBD, N_EMBD))
    writer.add_tensor("blk.0.attn_output.weight", np.zeros((N_EMBD, N_EMBD), dtype=np.float32))
    writer.add_tensor("blk.0.ffn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    writer.add_tensor("blk.0.ffn_gate.weight", weight(N_FF, N_EMBD))
    writer.add_tensor("blk.0.ffn_up.weight", weight(N_FF, N_EMBD))
    writer.add_tensor("blk.0.ffn_down.weight", np.zeros((N_EMBD, N_FF), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    partial.replace(target)
    return {
        "name": model.name,
        "file": target.name,
        "template": model.template,
        "template_sha256": hashlib.sha256(source.encode("utf-8")).hexdigest(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--templates", type=Path, required=True, help="the tree's models/templates folder")
    parser.add_argument("--out", type=Path, required=True, help="folder to write the models and models.json to")
    args = parser.parse_args(argv)
    missing = [m.template for m in MODELS if not (args.templates / m.template).is_file()]
    if missing:
        print(f"error: {args.templates} lacks {', '.join(missing)}", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    entries = [write_model(model, args.templates, args.out, seed) for seed, model in enumerate(MODELS)]
    manifest = args.out / "models.json"
    manifest.write_text(json.dumps({"models": entries}, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(entries)} models and {manifest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
