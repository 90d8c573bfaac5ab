//! The command line. Every subcommand acts on the same data directory and
//! database as the server, and may run while it runs.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "lore",
    version,
    about = "Lore: a self-hosted knowledge-base answering engine.",
    long_about = "Lore answers questions from your documentation with citations, or refuses honestly.\n\n\
Configuration is layered: compiled defaults, then lore.toml (or --config PATH), then LORE_* \
environment variables with __ between sections (LORE_DATABASE__URL=postgres://…).",
    after_help = "Start with `lore serve`, then open the printed URL."
)]
pub struct Cli {
    /// Configuration file (default: ./lore.toml when it exists).
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run Lore: console, admin API and public API on server.bind.
    ///
    /// Applies pending migrations first. With no identity provider configured
    /// it prints a one-time sign-in link (valid 15 minutes, from this machine only).
    Serve,
    /// Apply pending database migrations and exit.
    Migrate {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Print the effective configuration, with secrets redacted.
    Config {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Manage knowledge sources.
    Sources {
        #[command(subcommand)]
        command: SourcesCommand,
    },
    /// Index a file, a directory of files, or a website (creating or reusing
    /// its source), with a progress bar.
    Ingest {
        /// A file or directory path, or an http(s) URL.
        target: String,
        /// The source's name (default: the directory, file or host name).
        #[arg(long)]
        name: Option<String>,
        /// Machine-readable output (no progress bar).
        #[arg(long)]
        json: bool,
    },
    /// Benchmarks (they print a table and write a JSON record).
    Bench {
        #[command(subcommand)]
        command: BenchCommand,
    },
    /// Search the indexed content (hybrid: vector and full text).
    Search {
        query: String,
        /// How many results at most.
        #[arg(long, default_value_t = 5)]
        top_k: usize,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Embedding throughput and query latency, beside sentence-transformers
    /// and ONNX Runtime when `--peers-python` is given (`scripts/bench-embed`).
    Embed {
        /// How many chunks to embed.
        #[arg(long, default_value_t = 512)]
        chunks: usize,
        /// The Python with sentence-transformers and onnxruntime.
        #[arg(long, requires_all = ["peers_script", "onnx"])]
        peers_python: Option<PathBuf>,
        /// scripts/bench/embed_peers.py
        #[arg(long)]
        peers_script: Option<PathBuf>,
        /// The int8 ONNX export of all-MiniLM-L6-v2.
        #[arg(long)]
        onnx: Option<PathBuf>,
        /// Where the JSON record goes (default bench-results/embed.json).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Crawl + index pages/s of a generated site, and retrieval latency at
    /// several corpus sizes, flat and with the vector index.
    Index {
        #[arg(long, default_value_t = 200)]
        pages: usize,
        /// Corpus sizes for the retrieval latency (comma list).
        #[arg(long, value_delimiter = ',', default_values_t = [10_000usize, 100_000])]
        sizes: Vec<usize>,
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub enum SourcesCommand {
    /// Create a source (an upload source, or a website to crawl).
    Add {
        #[arg(long)]
        name: String,
        /// upload or website (page_bank is announced, not yet available).
        #[arg(long)]
        kind: String,
        /// Website: the start URL.
        #[arg(long)]
        url: Option<String>,
        /// Website: sitemap (default) or crawl.
        #[arg(long)]
        discovery: Option<String>,
        /// Website: glob patterns on the URL path to keep (repeatable).
        #[arg(long)]
        include: Vec<String>,
        /// Website: glob patterns on the URL path to leave out (repeatable).
        #[arg(long)]
        exclude: Vec<String>,
        #[arg(long)]
        max_pages: Option<usize>,
        #[arg(long)]
        max_depth: Option<usize>,
        /// static, low, medium or high: how often it is re-synced.
        #[arg(long)]
        volatility: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// List sources with status, counts and freshness.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Make a source's content searchable again (nothing is re-embedded).
    Enable {
        source: String,
        #[arg(long)]
        json: bool,
    },
    /// Hide a source's content from retrieval and stop syncing it; keeps it.
    Disable {
        source: String,
        #[arg(long)]
        json: bool,
    },
    /// Sync a source now (or, with --full and no source, re-embed everything).
    Reindex {
        source: Option<String>,
        /// Re-embed unchanged documents too and re-stamp the corpus fingerprint.
        #[arg(long)]
        full: bool,
        #[arg(long)]
        json: bool,
    },
    /// Delete a source with its documents and chunks.
    Rm {
        source: String,
        #[arg(long)]
        json: bool,
    },
}
