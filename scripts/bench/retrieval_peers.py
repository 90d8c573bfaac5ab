"""The peers of `lore bench retrieval`: the same vectors in FAISS (exact flat
and HNSW) and hnswlib, and LanceDB's own Python client on the table Lore
built, one query at a time on the same number of threads. Not a test.

Input: a directory Lore wrote, holding
  manifest.json  {"dimensions": 384, "count": N, "queries": Q, "k": 10,
                  "threads": 2, "lance": {"uri": ..., "table": ...,
                  "nprobes": ..., "refine_factor": ..., "ef": ...} or null}
  vectors.f32    N x dimensions little-endian float32, unit length, row i
                 being chunk i
  queries.f32    Q x dimensions, unit length
Output (stdout): one JSON object {"peers": [...]}: per peer and setting its
build time, p50/p95 per query, recall@k against the exact top k of each
query (FAISS's flat inner product on unit vectors, that is cosine) and
resident memory. Each peer runs in a process of its own so
that its memory is its own.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def rss_mb():
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def load(directory):
    manifest = json.load(open(os.path.join(directory, "manifest.json")))
    d = manifest["dimensions"]
    vectors = np.fromfile(os.path.join(directory, "vectors.f32"), dtype="<f4").reshape(-1, d)
    queries = np.fromfile(os.path.join(directory, "queries.f32"), dtype="<f4").reshape(-1, d)
    return manifest, vectors, queries


def recall(found, exact):
    return float(np.mean([len(set(f) & set(e)) / max(1, len(e)) for f, e in zip(found, exact)]))


def timed_queries(search, queries):
    """Each query alone, as a request would ask; the first ten warm up."""
    for q in queries[:10]:
        search(q)
    latencies, found = [], []
    for q in queries:
        t = time.perf_counter()
        ids = search(q)
        latencies.append((time.perf_counter() - t) * 1000)
        found.append([int(i) for i in ids])
    return found, latencies


def row(peer, setting, build_s, found, latencies, exact, base_mb):
    return {
        "peer": peer,
        "setting": setting,
        "build_s": build_s,
        "p50_ms": percentile(latencies, 50),
        "p95_ms": percentile(latencies, 95),
        "recall_at_k": recall(found, exact),
        "index_mb": max(0.0, rss_mb() - base_mb),
        "peak_rss_mb": peak_mb(),
    }


def faiss_flat(manifest, vectors, queries, exact):
    import faiss

    faiss.omp_set_num_threads(manifest["threads"])
    base = rss_mb()
    t = time.perf_counter()
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    build = time.perf_counter() - t
    k = manifest["k"]
    found, latencies = timed_queries(lambda q: index.search(q[None, :], k)[1][0], queries)
    return [row("faiss", "flat (exact)", build, found, latencies, exact, base)]


# Graph degree and construction breadth: FAISS's and hnswlib's usual
# settings for vectors of a few hundred dimensions.
HNSW_M = 32
EF_CONSTRUCTION = 100
EF_SEARCH = [16, 32, 64, 128, 256, 512]


def faiss_hnsw(manifest, vectors, queries, exact):
    import faiss

    faiss.omp_set_num_threads(manifest["threads"])
    base = rss_mb()
    t = time.perf_counter()
    index = faiss.IndexHNSWFlat(vectors.shape[1], HNSW_M, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = EF_CONSTRUCTION
    index.add(vectors)
    build = time.perf_counter() - t
    k = manifest["k"]
    rows = []
    for ef in EF_SEARCH:
        index.hnsw.efSearch = max(ef, k)
        found, latencies = timed_queries(lambda q: index.search(q[None, :], k)[1][0], queries)
        rows.append(row("faiss", f"HNSW M={HNSW_M} efSearch={ef}", build, found, latencies, exact, base))
    return rows


def hnswlib_peer(manifest, vectors, queries, exact):
    import hnswlib

    base = rss_mb()
    t = time.perf_counter()
    index = hnswlib.Index(space="ip", dim=vectors.shape[1])
    index.init_index(max_elements=len(vectors), M=HNSW_M // 2, ef_construction=EF_CONSTRUCTION)
    index.set_num_threads(manifest["threads"])
    index.add_items(vectors, np.arange(len(vectors)))
    build = time.perf_counter() - t
    index.set_num_threads(1)  # one query at a time, as a request asks
    k = manifest["k"]
    rows = []
    for ef in EF_SEARCH:
        index.set_ef(max(ef, k))
        found, latencies = timed_queries(lambda q: index.knn_query(q[None, :], k=k)[0][0], queries)
        rows.append(row("hnswlib", f"HNSW M={HNSW_M // 2} ef={ef}", build, found, latencies, exact, base))
    return rows


def lancedb_peer(manifest, vectors, queries, exact):
    """Lore's own table through LanceDB's Python client, with the probes,
    refinement and search breadth Lore asks for: Lore's time above this is
    Lore's overhead."""
    import lancedb

    lance = manifest["lance"]
    base = rss_mb()
    table = lancedb.connect(lance["uri"]).open_table(lance["table"])
    k = manifest["k"]
    ids = lance["ids"]

    def search(q):
        query = table.search(q.tolist(), vector_column_name="vector").distance_type("cosine").limit(k)
        if lance.get("nprobes"):
            query = query.nprobes(lance["nprobes"])
        if lance.get("refine_factor"):
            query = query.refine_factor(lance["refine_factor"])
        if lance.get("ef"):
            query = query.ef(lance["ef"])
        hits = query.select(["id"]).to_arrow()["id"].to_pylist()
        return [ids.get(i, -1) for i in hits]

    found, latencies = timed_queries(search, queries)
    return [row("lancedb-python", lance.get("setting", "as Lore asks"), 0.0, found, latencies, exact, base)]


PEERS = {"faiss-flat": faiss_flat, "faiss-hnsw": faiss_hnsw, "hnswlib": hnswlib_peer, "lancedb": lancedb_peer}


def exact_top(vectors, queries, k, threads):
    import faiss

    faiss.omp_set_num_threads(threads)
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    return index.search(queries, k)[1].tolist()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--input", required=True, help="the directory Lore wrote")
    parser.add_argument("--peer", choices=sorted(PEERS), help="run one peer (used by the script itself)")
    args = parser.parse_args()

    manifest, vectors, queries = load(args.input)
    exact_path = os.path.join(args.input, "exact.json")
    if args.peer:
        exact = json.load(open(exact_path))
        if args.peer == "lancedb":
            manifest["lance"]["ids"] = json.load(open(os.path.join(args.input, "ids.json")))
        json.dump(PEERS[args.peer](manifest, vectors, queries, exact), sys.stdout)
        return

    exact = exact_top(vectors, queries, manifest["k"], manifest["threads"])
    json.dump(exact, open(exact_path, "w"))
    del vectors
    peers = ["faiss-flat", "faiss-hnsw", "hnswlib"] + (["lancedb"] if manifest.get("lance") else [])
    rows = []
    for peer in peers:
        print(f"peer {peer} …", file=sys.stderr, flush=True)
        done = subprocess.run(
            [sys.executable, __file__, "--input", args.input, "--peer", peer],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            sys.exit(f"peer {peer} failed:\n{done.stderr}")
        rows.extend(json.loads(done.stdout))
    json.dump({"peers": rows}, sys.stdout)


if __name__ == "__main__":
    main()
