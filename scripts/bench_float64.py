"""Benchmark: the cost of a float64 forward against a float32 one, no hooks or fingerprints.

    PYTHONPATH=. python scripts/bench_float64.py [--layers 12] [--seq 2048] [--repeat 3]

GPT-2 (transformers, random weights, eager attention, batch 1): the floor under the float64
reference's stage of `check` at long sequences, where activations cost more than weights.
--repeat rounds of one float32 and one float64 forward (the first alternating); medians, and the
float64 / float32 ratio as the median of the rounds' ratios with its range.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from measure import Spread, host, own_cache, pairs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    own_cache()  # never the user's store
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    model = GPT2Model(GPT2Config(n_layer=args.layers, n_positions=max(args.seq, 1024), use_cache=False,
                                 attn_implementation="eager")).eval()
    x = torch.randint(0, 50257, (1, args.seq))
    times: dict[torch.dtype, list[float]] = {torch.float32: [], torch.float64: []}
    with torch.inference_mode():
        for order in pairs(args.repeat, (torch.float32, torch.float64)):
            for dtype in order:
                model.to(dtype)
                start = time.perf_counter()
                model(x)
                times[dtype].append(time.perf_counter() - start)
    f32, f64 = (statistics.median(times[d]) for d in (torch.float32, torch.float64))
    print(host("torch", "transformers"))
    print(f"gpt2 L{args.layers} seq{args.seq}, {torch.get_num_threads()} threads, {args.repeat} rounds: float32 "
          f"{f32:.1f} s, float64 {f64:.1f} s (medians); float64 / float32 "
          f"{Spread.of(times[torch.float64], times[torch.float32]).fmt()}")


if __name__ == "__main__":
    main()
