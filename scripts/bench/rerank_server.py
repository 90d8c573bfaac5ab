"""A reranking server for benchmarks: nanoranker's model behind the `/rerank`
protocol llama.cpp's server speaks.

No cross-encoder reranking model installs from the package registries this
project's machines reach; nanoranker (MIT) ships its weights in its wheel: a
small ONNX network that scores a query's and a document's Universal Sentence
Encoder vectors and character n-grams together. This server lets
`lore bench rerank` measure a real reranker through the same client and
protocol a user's llama.cpp, vLLM, Cohere, Jina or Voyage reranker is called
with. It is for benchmarks only: it listens on loopback and trusts its caller.

Usage: python rerank-server.py PORT
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import nanoranker

MAX_BODY = 8 << 20


def scores(query, documents):
    """One relevance score per document, in the documents' order."""
    if not documents:
        return []
    asked = nanoranker.embed(query)
    given = np.array([nanoranker.embed(document) for document in documents])
    pairs = np.concatenate([np.tile(asked, (len(given), 1)), given], axis=1).astype(np.float32)
    return [float(s) for s in nanoranker.reranker_model.run(["output"], {"input": pairs})[0].reshape(-1)]


class Handler(BaseHTTPRequestHandler):
    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/health":
            self.reply(200, {"status": "ok"})
        else:
            self.reply(404, {"error": {"message": "not found"}})

    def do_POST(self):
        if self.path not in ("/v1/rerank", "/rerank"):
            return self.reply(404, {"error": {"message": "not found"}})
        length = int(self.headers.get("content-length", "0"))
        if length > MAX_BODY:
            return self.reply(413, {"error": {"message": "the request is too large"}})
        try:
            request = json.loads(self.rfile.read(length))
            query = str(request["query"])
            documents = [str(d) for d in request["documents"]]
        except (ValueError, KeyError, TypeError) as err:
            return self.reply(400, {"error": {"message": f"a rerank request needs a query and documents: {err}"}})
        scored = scores(query, documents)
        results = sorted(
            ({"index": i, "relevance_score": s} for i, s in enumerate(scored)),
            key=lambda r: r["relevance_score"],
            reverse=True,
        )
        words = len(query.split()) * len(documents) + sum(len(d.split()) for d in documents)
        self.reply(200, {
            "model": request.get("model", "nanoranker"),
            "object": "list",
            "usage": {"prompt_tokens": words, "total_tokens": words},
            "results": results,
        })

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
