"""Benchmark: the cost of a float64 forward against a float32 one, no hooks or fingerprints.

    PYTHONPATH=. python scripts/bench_float64.py [--layers 12] [--seq 2048] [--repeat 1]

GPT-2 (transformers, random weights, eager attention, batch 1): the floor under the float64
reference's stage of `check` at long sequences, where activations cost more than weights.
"""

from __future__ import annotations

import argparse
import time

import torch


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    model = GPT2Model(GPT2Config(n_layer=args.layers, n_positions=max(args.seq, 1024), use_cache=False,
                                 attn_implementation="eager")).eval()
    x = torch.randint(0, 50257, (1, args.seq))
    best = {}
    with torch.inference_mode():
        for dtype in (torch.float32, torch.float64) * args.repeat:
            model.to(dtype)
            start = time.perf_counter()
            model(x)
            best[dtype] = min(best.get(dtype, float("inf")), time.perf_counter() - start)
    f32, f64 = best[torch.float32], best[torch.float64]
    print(f"gpt2 L{args.layers} seq{args.seq}, {torch.get_num_threads()} threads: float32 {f32:.1f} s, "
          f"float64 {f64:.1f} s ({f64 / f32:.2f}x)")


if __name__ == "__main__":
    main()
